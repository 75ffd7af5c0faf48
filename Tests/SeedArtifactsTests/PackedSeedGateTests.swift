import Foundation
import SQLiteKit
import Testing
import _SeedkitTestSupport

@testable import SeedArtifacts

/// A packed seed is checked as it decompresses (`SQLiteHeaderGate`): its first 100 bytes must be a SQLite
/// header declaring the database size, and nothing past that size is written. Before this, a 33 KB frame made
/// `verify` write 1 GiB to the temporary directory before answering `not_sqlite` (issue #19).
@Suite("packed seeds: the SQLite header gate")
struct PackedSeedGateTests {
    /// A 100-byte SQLite header of `pages` pages of `pageSize` bytes; `validCount` false makes the in-header size
    /// unusable (version-valid-for differs from the change counter).
    static func header(pages: UInt32, pageSize: UInt16 = 4096, validCount: Bool = true) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: 100)
        bytes.replaceSubrange(0..<16, with: Array("SQLite format 3".utf8) + [0])
        bytes[16] = UInt8(pageSize >> 8)
        bytes[17] = UInt8(pageSize & 0xFF)
        bytes[18] = 1
        bytes[19] = 1
        bytes[21] = 64
        bytes[22] = 32
        bytes[23] = 32
        func put(_ value: UInt32, at offset: Int) {
            for index in 0..<4 { bytes[offset + index] = UInt8(truncatingIfNeeded: value >> (24 - 8 * index)) }
        }
        put(7, at: 24)
        put(pages, at: 28)
        put(validCount ? 7 : 8, at: 92)
        return bytes
    }

    static func unpack(_ content: [UInt8], requireSQLite: Bool = true) throws -> (PackError?, [String]) {
        let directory = try TemporaryDirectory(prefix: "seedkit-gate")
        let frame = try PackTests.frame(content, declaresSize: false)
        let input = try directory.write("seed.db.zst", frame)
        var failure: PackError?
        do {
            _ = try SeedPacker.unpack(
                input, to: directory.path("seed.db"),
                options: UnpackOptions(requireSQLiteDatabase: requireSQLite))
        } catch {
            failure = error
        }
        let left = try FileManager.default.contentsOfDirectory(atPath: directory.url.path).filter { $0 != "seed.db.zst" }
        return (failure, left)
    }

    @Test("zeros behind a header declaring one page stop at 4096 bytes: exceeds_declared_database_size")
    func zerosPastTheDeclaredSize() throws {
        let content = Self.header(pages: 1) + [UInt8](repeating: 0, count: 32 << 20)
        let frame = try PackTests.frame(content, declaresSize: false)
        #expect(frame.count < 64 << 10, "the attack frame is small: \(frame.count) bytes")
        let (failure, left) = try Self.unpack(content)
        #expect(failure == .exceedsDeclaredDatabaseSize(declared: 4096))
        #expect(left.isEmpty, "left behind: \(left)")
        // Without the gate (any content), the same frame unpacks: the gate is what refuses it.
        let (plain, _) = try Self.unpack(content, requireSQLite: false)
        #expect(plain == nil)
    }

    @Test("content that is not a SQLite database is refused on its first 100 bytes", arguments: [
        [UInt8](repeating: 0, count: 1 << 20),
        Array("not a database at all, just text".utf8),
        header(pages: 1, pageSize: 1000) + [UInt8](repeating: 0, count: 4000),
        header(pages: 2, validCount: false) + [UInt8](repeating: 0, count: 8092),
        header(pages: 0) + [UInt8](repeating: 0, count: 3996),
    ])
    func notADatabase(content: [UInt8]) throws {
        let (failure, left) = try Self.unpack(content)
        #expect(failure?.rule == "not_sqlite", "got \(String(describing: failure))")
        #expect(left.isEmpty)
    }

    @Test("a real seed-shaped database unpacks byte for byte through the gate")
    func realDatabasePasses() throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-gate")
        try PackTests.catalogDatabase(at: directory.path("seed.db"), rows: 2000)
        _ = try SeedPacker.pack(directory.path("seed.db"), to: directory.path("seed.db.zst"), options: PackOptions(level: 3))
        _ = try SeedPacker.unpack(
            directory.path("seed.db.zst"), to: directory.path("copy.db"),
            options: UnpackOptions(requireSQLiteDatabase: true))
        #expect(try PackTests.read(directory.path("copy.db")) == PackTests.read(directory.path("seed.db")))
    }

    @Test("verify stops a packed database at its declared size, and answers not_sqlite for a packed non-database")
    func verifyRefusesQuickly() throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-gate")
        let scratch = directory.path("tmp")
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        let options = SeedVerificationOptions(temporaryDirectory: scratch)
        // A one-page header and 16 MiB of zeros: without the gate this unpacks whole and reaches the checks.
        let padded = Self.header(pages: 1) + [UInt8](repeating: 0, count: (16 << 20) - 100)
        let oversized = try directory.write("big.db.zst", PackTests.frame(padded, declaresSize: false))
        let stopped = #expect(throws: SeedInputError.self) { try SeedVerifier.verify(path: oversized, options: options) }
        #expect("\(stopped.map { "\($0)" } ?? "")".contains("exceeds_declared_database_size"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch).isEmpty)

        let zeros = try directory.write(
            "evil.db.zst", PackTests.frame([UInt8](repeating: 0, count: 16 << 20), declaresSize: false))
        let error = #expect(throws: SeedInputError.self) { try SeedVerifier.verify(path: zeros, options: options) }
        #expect(error == .notSQLite(path: zeros))
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch).isEmpty)
    }
}
