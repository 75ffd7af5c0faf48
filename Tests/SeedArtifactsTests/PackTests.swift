import CZstd
import Foundation
import SQLiteKit
import SynchroProtocol
import Synchronization
import Testing
import _SeedkitTestSupport

@testable import SeedArtifacts

/// `SeedPacker`: streaming zstd pack/unpack of seeds, its refusals, and that a refusal never leaves output.
@Suite("seed packing")
struct PackTests {
    // MARK: - Fixtures

    /// A seed-like SQLite database: a product catalog table with text, integer and real columns.
    static func catalogDatabase(at path: String, rows: Int) throws {
        let connection = try Connection(path: path)
        defer { connection.close() }
        try connection.execute("""
            PRAGMA journal_mode=DELETE;
            CREATE TABLE products (id INTEGER PRIMARY KEY, sku TEXT NOT NULL, name TEXT NOT NULL,
                price REAL NOT NULL, stock INTEGER NOT NULL);
            """)
        let insert = try connection.prepare("INSERT INTO products VALUES (?, ?, ?, ?, ?)")
        try connection.transaction {
            for row in 0..<rows {
                try insert.run(
                    Int64(row), "SKU-\(row)", "product \(row % 97) in range \(row % 13)", Double(row % 500) / 4,
                    Int64(row % 1000))
            }
        }
    }

    /// `count` bytes: half pseudo-random, half repetitive text, so both zstd paths are exercised.
    static func mixedBytes(count: Int, seed: UInt64 = 0x5EED) -> [UInt8] {
        var state = seed
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count)
        while bytes.count < count / 2 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            z ^= z >> 31
            withUnsafeBytes(of: z) { bytes.append(contentsOf: $0) }
        }
        let line = Array("catalog row with a fairly repetitive description and a price\n".utf8)
        while bytes.count < count { bytes.append(line[bytes.count % line.count]) }
        return Array(bytes.prefix(count))
    }

    /// A frame compressed here with libzstd directly, with or without a content size and a checksum.
    static func frame(_ bytes: [UInt8], declaresSize: Bool, checksum: Bool = true) throws -> [UInt8] {
        let context = try #require(ZSTD_createCCtx())
        defer { ZSTD_freeCCtx(context) }
        _ = ZSTD_CCtx_setParameter(context, ZSTD_c_compressionLevel, 3)
        _ = ZSTD_CCtx_setParameter(context, ZSTD_c_checksumFlag, checksum ? 1 : 0)
        _ = ZSTD_CCtx_setParameter(context, ZSTD_c_contentSizeFlag, declaresSize ? 1 : 0)
        var out = [UInt8](repeating: 0, count: ZSTD_compressBound(bytes.count))
        let written = out.withUnsafeMutableBytes { target in
            bytes.withUnsafeBytes { source in
                ZSTD_compress2(context, target.baseAddress, target.count, source.baseAddress, source.count)
            }
        }
        try #require(ZSTD_isError(written) == 0)
        return Array(out.prefix(written))
    }

    static func read(_ path: String) throws -> [UInt8] {
        Array(try Data(contentsOf: URL(fileURLWithPath: path)))
    }

    static func listing(_ directory: TemporaryDirectory) throws -> Set<String> {
        Set(try FileManager.default.contentsOfDirectory(atPath: directory.url.path))
    }

    /// Unpacking `bytes` is refused with `expected`, and the directory holds nothing new afterwards:
    /// no destination, no temporary file.
    static func expectRefusal(
        _ bytes: [UInt8], limit: Int64 = PackOptions.defaultMaximumOutputBytes,
        sourceLocation: SourceLocation = #_sourceLocation, _ expected: (PackError) -> Bool
    ) throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-pack")
        let input = try directory.write("seed.db.zst", bytes)
        let before = try listing(directory)
        let error = #expect(throws: PackError.self, sourceLocation: sourceLocation) {
            try SeedPacker.unpack(
                input, to: directory.path("seed.db"), options: UnpackOptions(maximumOutputBytes: limit))
        }
        if let error { #expect(expected(error), "unexpected \(error)", sourceLocation: sourceLocation) }
        #expect(try listing(directory) == before, sourceLocation: sourceLocation)
    }

    /// The packed form of `bytes` at level 3 (fast; the level does not matter to the checks that use it).
    static func packed(_ bytes: [UInt8]) throws -> [UInt8] {
        let directory = try TemporaryDirectory(prefix: "seedkit-pack")
        let input = try directory.write("seed.db", bytes)
        _ = try SeedPacker.pack(input, to: directory.path("seed.db.zst"), options: PackOptions(level: 3))
        return try read(directory.path("seed.db.zst"))
    }

    // MARK: - Round trips

    @Test("a SQLite database round-trips byte for byte at the default level")
    func sqliteRoundTrip() throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-pack")
        let database = directory.path("seed.db")
        try Self.catalogDatabase(at: database, rows: 5_000)
        let original = try Self.read(database)

        let packed = try SeedPacker.pack(database, to: directory.path("seed.db.zst"))
        #expect(packed.level == PackOptions.defaultLevel)
        #expect(packed.uncompressedBytes == Int64(original.count))
        #expect(SeedPacker.isZstdFrame(path: directory.path("seed.db.zst")))
        #expect(!SeedPacker.isZstdFrame(path: database))

        let unpacked = try SeedPacker.unpack(directory.path("seed.db.zst"), to: directory.path("copy.db"))
        #expect(try Self.read(directory.path("copy.db")) == original)
        #expect(unpacked.level == nil)
        #expect(unpacked.uncompressedSHA256 == packed.uncompressedSHA256)
        #expect(unpacked.compressedSHA256 == packed.compressedSHA256)
        #expect(unpacked.compressedBytes == packed.compressedBytes)
        #expect(packed.ratio > 2)
        #expect(try Self.listing(directory) == ["seed.db", "seed.db.zst", "copy.db"])
    }

    @Test("several MB of random and compressible data round-trip across many chunks", arguments: [1, 2])
    func largeRoundTrip(workers: Int) throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-pack")
        let original = Self.mixedBytes(count: 6 << 20)
        let input = try directory.write("big.bin", original)
        let packed = try SeedPacker.pack(
            input, to: directory.path("big.bin.zst"), options: PackOptions(level: 3, workers: workers))
        let unpacked = try SeedPacker.unpack(directory.path("big.bin.zst"), to: directory.path("copy.bin"))
        #expect(try Self.read(directory.path("copy.bin")) == original)
        #expect(packed == PackReport(
            uncompressedBytes: unpacked.uncompressedBytes, compressedBytes: unpacked.compressedBytes,
            uncompressedSHA256: unpacked.uncompressedSHA256, compressedSHA256: unpacked.compressedSHA256, level: 3))
    }

    @Test("the frame does not depend on the worker count")
    func workerCountIsNotInTheFrame() throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-pack")
        let input = try directory.write("big.bin", Self.mixedBytes(count: 3 << 20))
        let one = try SeedPacker.pack(input, to: directory.path("1.zst"), options: PackOptions(level: 5, workers: 1))
        let three = try SeedPacker.pack(input, to: directory.path("3.zst"), options: PackOptions(level: 5, workers: 3))
        #expect(one.compressedSHA256 == three.compressedSHA256)
    }

    @Test("an empty file round-trips")
    func emptyRoundTrip() throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-pack")
        let input = try directory.write("empty", [])
        let packed = try SeedPacker.pack(input, to: directory.path("empty.zst"))
        #expect(packed.uncompressedBytes == 0)
        _ = try SeedPacker.unpack(directory.path("empty.zst"), to: directory.path("copy"))
        #expect(try Self.read(directory.path("copy")) == [])
    }

    @Test("the reported digests are the SHA-256 of the files' bytes")
    func digestsAreIndependentlyCorrect() throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-pack")
        let abc = try directory.write("abc", Array("abc".utf8))
        let report = try SeedPacker.pack(abc, to: directory.path("abc.zst"))
        // FIPS 180-2 test vector for "abc".
        #expect(report.uncompressedSHA256 == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(report.compressedSHA256 == Hex.encode(SHA256.hash(try Self.read(directory.path("abc.zst")))))

        let big = try directory.write("big", Self.mixedBytes(count: 2 << 20 + 12_345))
        let bigReport = try SeedPacker.pack(big, to: directory.path("big.zst"), options: PackOptions(level: 1))
        #expect(bigReport.uncompressedSHA256 == Hex.encode(SHA256.hash(try Self.read(big))))
        #expect(bigReport.compressedSHA256 == Hex.encode(SHA256.hash(try Self.read(directory.path("big.zst")))))
        #expect(bigReport.compressedBytes == Int64(try Self.read(directory.path("big.zst")).count))
    }

    @Test("progress reaches the input size")
    func progressReachesTheEnd() throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-pack")
        let input = try directory.write("big", Self.mixedBytes(count: 9 << 20))
        let seen = ProgressLog()
        _ = try SeedPacker.pack(
            input, to: directory.path("big.zst"), options: PackOptions(level: 1, progress: { seen.append($0) }))
        #expect(seen.values.count >= 2)
        #expect(seen.values.last == PackProgress(processedBytes: 9 << 20, totalBytes: 9 << 20))
    }

    // MARK: - Options

    @Test("levels outside 1...22 are refused before anything is written", arguments: [Int32(0), -1, -5, 23, 100])
    func invalidLevel(level: Int32) throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-pack")
        let input = try directory.write("seed.db", Array("seed".utf8))
        #expect(throws: PackError.invalidLevel(level)) {
            try SeedPacker.pack(input, to: directory.path("seed.db.zst"), options: PackOptions(level: level))
        }
        #expect(try Self.listing(directory) == ["seed.db"])
    }

    @Test("levels 1 and 22 are accepted", arguments: [Int32(1), 22])
    func boundaryLevels(level: Int32) throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-pack")
        let input = try directory.write("seed.db", Self.mixedBytes(count: 100_000))
        let report = try SeedPacker.pack(input, to: directory.path("seed.db.zst"), options: PackOptions(level: level))
        #expect(report.level == level)
        _ = try SeedPacker.unpack(directory.path("seed.db.zst"), to: directory.path("copy.db"))
        #expect(try Self.read(directory.path("copy.db")) == Self.read(input))
    }

    @Test("worker counts and output limits are validated")
    func otherOptions() throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-pack")
        let input = try directory.write("seed.db", Array("seed".utf8))
        let output = directory.path("seed.db.zst")
        #expect(throws: PackError.invalidWorkerCount(0)) {
            try SeedPacker.pack(input, to: output, options: PackOptions(workers: 0))
        }
        #expect(throws: PackError.invalidOutputLimit(0)) {
            try SeedPacker.pack(input, to: output, options: PackOptions(maximumOutputBytes: 0))
        }
        #expect(throws: PackError.invalidOutputLimit(-1)) {
            try SeedPacker.unpack(input, to: output, options: UnpackOptions(maximumOutputBytes: -1))
        }
    }

    // MARK: - Damaged and unusable input

    @Test("a flipped byte in the middle of the frame is rejected and leaves no output")
    func flippedByte() throws {
        var bytes = try Self.packed(Self.mixedBytes(count: 1 << 20))
        bytes[bytes.count / 2] ^= 0x40
        try Self.expectRefusal(bytes) { $0 == .checksumMismatch || $0.rule == "corrupt_frame" }
    }

    @Test("a flipped byte in the content checksum is a checksum mismatch")
    func flippedChecksum() throws {
        var bytes = try Self.packed(Self.mixedBytes(count: 200_000))
        bytes[bytes.count - 2] ^= 0x01
        try Self.expectRefusal(bytes) { $0 == .checksumMismatch }
    }

    @Test("a truncated frame is rejected and leaves no output", arguments: [0.5, 0.99, 1.0])
    func truncatedFrame(fraction: Double) throws {
        let bytes = try Self.packed(Self.mixedBytes(count: 1 << 20))
        let kept = fraction == 1.0 ? bytes.count - 1 : Int(Double(bytes.count) * fraction)
        try Self.expectRefusal(Array(bytes.prefix(kept))) { $0 == .truncated }
    }

    @Test("a frame cut inside its header is truncated")
    func truncatedHeader() throws {
        let bytes = try Self.packed(Self.mixedBytes(count: 1_000))
        try Self.expectRefusal(Array(bytes.prefix(5))) { $0 == .truncated }
        try Self.expectRefusal(Array(bytes.prefix(4))) { $0 == .truncated }
    }

    @Test("input that is not a zstd frame is rejected", arguments: [
        Array("SQLite format 3\u{0}".utf8), [], [0x28, 0xB5, 0x2F], [0x50, 0x2A, 0x4D, 0x18, 0, 0, 0, 0],
    ])
    func notZstd(bytes: [UInt8]) throws {
        try Self.expectRefusal(bytes) { $0.rule == "not_zstd" }
    }

    @Test("a SQLite database is not a zstd frame")
    func sqliteIsNotZstd() throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-pack")
        try Self.catalogDatabase(at: directory.path("seed.db"), rows: 10)
        #expect(throws: PackError.notZstd(path: directory.path("seed.db"))) {
            try SeedPacker.unpack(directory.path("seed.db"), to: directory.path("copy.db"))
        }
        #expect(!SeedPacker.isZstdFrame(path: directory.path("missing")))
    }

    @Test("a frame without a content checksum is refused")
    func missingChecksum() throws {
        let bytes = try Self.frame(Array("seed".utf8), declaresSize: true, checksum: false)
        try Self.expectRefusal(bytes) { $0 == .missingContentChecksum }
    }

    @Test("bytes after the frame are refused: garbage or a second frame")
    func trailingData() throws {
        let bytes = try Self.packed(Self.mixedBytes(count: 300_000))
        try Self.expectRefusal(bytes + [0]) { $0 == .trailingData }
        try Self.expectRefusal(bytes + bytes) { $0 == .trailingData }
    }

    // MARK: - Size limits

    @Test("a declared content size over the limit is refused before anything is written")
    func declaredSizeOverLimit() throws {
        let bytes = try Self.packed(Self.mixedBytes(count: 2 << 20))
        try Self.expectRefusal(bytes, limit: 1 << 20) {
            $0 == .declaredSizeExceedsLimit(declared: 2 << 20, limit: 1 << 20)
        }
    }

    @Test("a frame without a declared size is stopped at the limit and leaves no output")
    func undeclaredSizeOverLimit() throws {
        let content = Self.mixedBytes(count: 4 << 20)
        let bytes = try Self.frame(content, declaresSize: false)
        try Self.expectRefusal(bytes, limit: 1 << 20) { $0 == .outputLimitExceeded(limit: 1 << 20) }
        try Self.expectRefusal(bytes, limit: Int64(content.count) - 1) {
            $0 == .outputLimitExceeded(limit: Int64(content.count) - 1)
        }
    }

    @Test("a frame without a declared size unpacks when it fits, even exactly")
    func undeclaredSizeWithinLimit() throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-pack")
        let content = Self.mixedBytes(count: 1 << 20)
        let input = try directory.write("seed.db.zst", try Self.frame(content, declaresSize: false))
        let report = try SeedPacker.unpack(
            input, to: directory.path("seed.db"), options: UnpackOptions(maximumOutputBytes: Int64(content.count)))
        #expect(report.uncompressedBytes == Int64(content.count))
        #expect(try Self.read(directory.path("seed.db")) == content)
    }

    @Test("a pack whose output would exceed the limit is refused and leaves no output")
    func packOverLimit() throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-pack")
        let input = try directory.write("random.bin", Self.mixedBytes(count: 2 << 20))
        #expect(throws: PackError.outputLimitExceeded(limit: 100_000)) {
            try SeedPacker.pack(
                input, to: directory.path("random.bin.zst"),
                options: PackOptions(level: 1, maximumOutputBytes: 100_000))
        }
        #expect(try Self.listing(directory) == ["random.bin"])
    }

    // MARK: - Destinations and inputs

    @Test("an existing output is kept unless overwriting is asked for")
    func existingOutput() throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-pack")
        let input = try directory.write("seed.db", Self.mixedBytes(count: 10_000))
        let output = try directory.write("seed.db.zst", Array("keep me".utf8))
        #expect(throws: PackError.outputExists(path: output)) { try SeedPacker.pack(input, to: output) }
        #expect(try Self.read(output) == Array("keep me".utf8))

        _ = try SeedPacker.pack(input, to: output, options: PackOptions(overwrite: true))
        #expect(SeedPacker.isZstdFrame(path: output))

        let copy = try directory.write("copy.db", Array("keep me too".utf8))
        #expect(throws: PackError.outputExists(path: copy)) { try SeedPacker.unpack(output, to: copy) }
        #expect(try Self.read(copy) == Array("keep me too".utf8))
        _ = try SeedPacker.unpack(output, to: copy, options: UnpackOptions(overwrite: true))
        #expect(try Self.read(copy) == Self.read(input))
        #expect(try Self.listing(directory) == ["seed.db", "seed.db.zst", "copy.db"])
    }

    @Test("a SQLite sidecar beside the database is refused on both sides")
    func sidecars() throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-pack")
        let input = try directory.write("seed.db", Self.mixedBytes(count: 10_000))
        try directory.write("seed.db-wal", [1])
        #expect(throws: PackError.sidecarPresent(path: input + "-wal")) {
            try SeedPacker.pack(input, to: directory.path("seed.db.zst"))
        }
        try FileManager.default.removeItem(atPath: input + "-wal")
        _ = try SeedPacker.pack(input, to: directory.path("seed.db.zst"))
        try directory.write("copy.db-journal", [1])
        #expect(throws: PackError.sidecarPresent(path: directory.path("copy.db-journal"))) {
            try SeedPacker.unpack(directory.path("seed.db.zst"), to: directory.path("copy.db"))
        }
    }

    @Test("inputs that cannot be read are named with errno text, not contents")
    func unreadableInputs() throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-pack")
        let missing = directory.path("missing.db")
        #expect(throws: PackError.io(operation: "open", path: missing, errno: ENOENT)) {
            try SeedPacker.pack(missing, to: directory.path("out.zst"))
        }
        #expect(throws: PackError.notRegularFile(path: directory.url.path)) {
            try SeedPacker.pack(directory.url.path, to: directory.path("out.zst"))
        }
        #expect(throws: PackError.notRegularFile(path: directory.url.path)) {
            try SeedPacker.unpack(directory.url.path, to: directory.path("out.db"))
        }
        #expect(!SeedPacker.isZstdFrame(path: directory.url.path))
        let error = PackError.io(operation: "open", path: missing, errno: ENOENT)
        #expect(error.description == "io: cannot open \(missing): No such file or directory")
        #expect(try Self.listing(directory).isEmpty)
    }

    @Test("every error's description starts with the rule it names")
    func descriptionsNameTheRule() {
        let errors: [PackError] = [
            .invalidLevel(0), .invalidWorkerCount(0), .invalidOutputLimit(0), .notRegularFile(path: "d"),
            .inputChanged(path: "f"), .notZstd(path: "f"), .missingContentChecksum,
            .declaredSizeExceedsLimit(declared: 2, limit: 1), .windowTooLarge, .truncated, .checksumMismatch,
            .corrupt("Data corruption detected"), .trailingData, .outputLimitExceeded(limit: 1),
            .outputExists(path: "f"), .sidecarPresent(path: "f-wal"), .compressionFailed("x"),
            .io(operation: "read", path: "f", errno: EIO),
        ]
        #expect(Set(errors.map(\.rule)).count == errors.count)
        for error in errors {
            #expect(error.description.hasPrefix(error.rule + ": "))
        }
    }

    // MARK: - Interoperability

    static let zstdCLI = "/usr/bin/zstd"

    @Test(
        "frames interoperate with the zstd command-line tool",
        .enabled(if: FileManager.default.isExecutableFile(atPath: zstdCLI)))
    func zstdCLIInteroperability() throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-pack")
        let original = Self.mixedBytes(count: 1 << 20)
        let input = try directory.write("seed.db", original)
        _ = try SeedPacker.pack(input, to: directory.path("ours.zst"), options: PackOptions(level: 3))
        #expect(try Self.runZstd(["-d", "-q", "-o", directory.path("theirs.db"), directory.path("ours.zst")]) == 0)
        #expect(try Self.read(directory.path("theirs.db")) == original)

        #expect(try Self.runZstd(["-3", "-q", "-o", directory.path("cli.zst"), input]) == 0)
        _ = try SeedPacker.unpack(directory.path("cli.zst"), to: directory.path("from-cli.db"))
        #expect(try Self.read(directory.path("from-cli.db")) == original)
    }

    static func runZstd(_ arguments: [String]) throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: zstdCLI)
        process.arguments = arguments
        try process.run()
        process.waitUntilExit()
        return process.terminationStatus
    }
}

/// Progress reports collected from the packer's calling thread.
private final class ProgressLog: Sendable {
    private let storage = Mutex<[PackProgress]>([])

    func append(_ progress: PackProgress) {
        storage.withLock { $0.append(progress) }
    }

    var values: [PackProgress] { storage.withLock { $0 } }
}
