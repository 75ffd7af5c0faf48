import Foundation
import SQLiteKit
import Testing
import _SeedkitTestSupport

@testable import SeedArtifacts

/// Issue #20, small updates: `pack --patch-from` writes a zstd frame against the previous seed and `unpack
/// --patch-from` rebuilds the new seed byte for byte; the wrong previous seed, a missing one or a digest other than
/// the expected (signed) one is refused, and nothing is published.
@Suite("seed patches")
struct PatchTests {
    /// Two versions of a catalog: the second with 1% of the rows changed.
    static func versions(in directory: TemporaryDirectory) throws -> (previous: String, next: String) {
        let previous = directory.path("previous.db"), next = directory.path("next.db")
        try PackTests.catalogDatabase(at: previous, rows: 20_000)
        try FileManager.default.copyItem(atPath: previous, toPath: next)
        let connection = try Connection(path: next)
        defer { connection.close() }
        try connection.execute("UPDATE products SET name = name || ' (new)', stock = stock + 1 WHERE id % 100 = 7")
        return (previous, next)
    }

    @Test("a patch rebuilds the new seed exactly and is a small fraction of the full frame")
    func patchRoundTrip() throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-patch")
        let (previous, next) = try Self.versions(in: directory)
        let full = try SeedPacker.pack(next, to: directory.path("next.db.zst"), options: PackOptions(level: 3))
        let patch = try SeedPacker.pack(
            next, to: directory.path("next.db.patch.zst"), options: PackOptions(level: 3, patchFrom: previous))
        #expect(patch.uncompressedSHA256 == full.uncompressedSHA256)
        #expect(
            patch.compressedBytes * 10 < full.compressedBytes,
            "patch \(patch.compressedBytes), full \(full.compressedBytes)")

        var options = UnpackOptions(requireSQLiteDatabase: true)
        options.patchFrom = previous
        options.expectedSHA256 = full.uncompressedSHA256
        let applied = try SeedPacker.unpack(
            directory.path("next.db.patch.zst"), to: directory.path("copy.db"), options: options)
        #expect(applied.uncompressedSHA256 == full.uncompressedSHA256)
        #expect(try PackTests.read(directory.path("copy.db")) == (try PackTests.read(next)))
    }

    @Test("the wrong previous seed, no previous seed, or another expected digest publishes nothing")
    func refusals() throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-patch")
        let (previous, next) = try Self.versions(in: directory)
        let frame = directory.path("next.db.patch.zst")
        let report = try SeedPacker.pack(next, to: frame, options: PackOptions(level: 3, patchFrom: previous))
        let before = try PackTests.listing(directory)

        var wrong = UnpackOptions()
        wrong.patchFrom = next
        #expect(throws: PackError.self) { try SeedPacker.unpack(frame, to: directory.path("out.db"), options: wrong) }
        #expect(throws: PackError.self) { try SeedPacker.unpack(frame, to: directory.path("out.db")) }

        var signed = UnpackOptions()
        signed.patchFrom = previous
        signed.expectedSHA256 = String(repeating: "0", count: 64)
        let error = #expect(throws: PackError.self) {
            try SeedPacker.unpack(frame, to: directory.path("out.db"), options: signed)
        }
        #expect(error?.rule == "signed_digest_mismatch")
        #expect(try PackTests.listing(directory) == before)
        #expect(report.uncompressedBytes == Int64(try PackTests.read(next).count))
    }
}
