import Foundation

/// How ``SeedPacker/pack(_:to:options:)`` compresses a seed database.
public struct PackOptions: Sendable {
    /// The default level, 19: a seed is compressed once per release and downloaded by every device
    /// install, and decompression speed does not depend on the level. 19 is the strongest level whose
    /// window (8 MiB) keeps a device's decompression memory small; 20–22 need windows of up to 128 MiB.
    public static let defaultLevel: Int32 = 19
    /// Output limit when none is given: 4 GiB.
    public static let defaultMaximumOutputBytes: Int64 = 4 << 30

    /// zstd compression level, 1...22.
    public var level: Int32
    /// Compression threads. Any value from 1 gives byte-identical frames (libzstd's multithreaded
    /// format does not depend on the thread count, and matches the `zstd` CLI at the same level), so
    /// this only trades memory for speed: about one 4-window job buffer per worker.
    public var workers: Int
    /// The compressed output may not exceed this many bytes.
    public var maximumOutputBytes: Int64
    /// Replace an existing destination (atomically); otherwise an existing destination is refused.
    public var overwrite: Bool
    /// Called as the input is consumed, from the calling thread.
    public var progress: (@Sendable (PackProgress) -> Void)?
    /// The previous seed: the frame becomes a patch that only unpacks against that exact file (`pack
    /// --patch-from`), with long-distance matching and a window of at most 128 MiB.
    public var patchFrom: String?

    public init(
        level: Int32 = PackOptions.defaultLevel, workers: Int = PackOptions.defaultWorkers,
        maximumOutputBytes: Int64 = PackOptions.defaultMaximumOutputBytes, overwrite: Bool = false,
        patchFrom: String? = nil, progress: (@Sendable (PackProgress) -> Void)? = nil
    ) {
        self.patchFrom = patchFrom
        self.level = level
        self.workers = workers
        self.maximumOutputBytes = maximumOutputBytes
        self.overwrite = overwrite
        self.progress = progress
    }

    /// One worker per active processor, at most 4 (beyond that the jobs of a seed-sized file run out).
    public static var defaultWorkers: Int {
        min(max(ProcessInfo.processInfo.activeProcessorCount, 1), 4)
    }

    /// Levels libzstd accepts that seedkit allows (the negative "fast" levels are not offered).
    public static let levels: ClosedRange<Int32> = 1...22
    static let workerCounts: ClosedRange<Int> = 1...256

    func validated() throws(PackError) -> PackOptions {
        guard Self.levels.contains(level) else { throw .invalidLevel(level) }
        guard Self.workerCounts.contains(workers) else { throw .invalidWorkerCount(workers) }
        guard maximumOutputBytes > 0 else { throw .invalidOutputLimit(maximumOutputBytes) }
        return self
    }
}

/// How ``SeedPacker/unpack(_:to:options:)`` decompresses a packed seed.
public struct UnpackOptions: Sendable {
    /// The decompressed output may not exceed this many bytes: a frame declaring more is refused before
    /// anything is written, and a frame without a declared size is stopped as soon as it produces more.
    public var maximumOutputBytes: Int64
    /// Replace an existing destination (atomically); otherwise an existing destination is refused.
    public var overwrite: Bool
    /// Called as the compressed input is consumed, from the calling thread.
    public var progress: (@Sendable (PackProgress) -> Void)?
    /// The content must be a SQLite database (a packed seed): its header is checked on the first 100 bytes,
    /// before they are written, and the output stops at the size the header declares (``SQLiteHeaderGate``).
    public var requireSQLiteDatabase: Bool
    /// The previous seed a patch was made against (`unpack --patch-from`); nil for a full frame.
    public var patchFrom: String?
    /// The lowercase hex SHA-256 the output must have (the signed digest of the seed), checked before the output
    /// is published; nil checks nothing beyond the frame's own checksum.
    public var expectedSHA256: String?

    public init(
        maximumOutputBytes: Int64 = PackOptions.defaultMaximumOutputBytes, overwrite: Bool = false,
        requireSQLiteDatabase: Bool = false, progress: (@Sendable (PackProgress) -> Void)? = nil
    ) {
        self.maximumOutputBytes = maximumOutputBytes
        self.overwrite = overwrite
        self.requireSQLiteDatabase = requireSQLiteDatabase
        self.progress = progress
    }

    func validated() throws(PackError) -> UnpackOptions {
        guard maximumOutputBytes > 0 else { throw .invalidOutputLimit(maximumOutputBytes) }
        return self
    }
}

/// How far a pack or unpack has read its input.
public struct PackProgress: Sendable, Equatable {
    /// Input bytes consumed so far.
    public let processedBytes: Int64
    /// The input's size.
    public let totalBytes: Int64
}

/// What a pack or unpack produced, in terms of the uncompressed database and the compressed frame
/// whichever the direction, so evidence can record both digests from either.
public struct PackReport: Sendable, Equatable {
    /// Size of the database (the pack input, the unpack output).
    public let uncompressedBytes: Int64
    /// Size of the zstd frame (the pack output, the unpack input).
    public let compressedBytes: Int64
    /// Lowercase hex SHA-256 of the database bytes.
    public let uncompressedSHA256: String
    /// Lowercase hex SHA-256 of the frame bytes.
    public let compressedSHA256: String
    /// The level used to pack; nil after an unpack (a frame does not record it).
    public let level: Int32?

    /// Uncompressed size over compressed size (0 for an empty frame).
    public var ratio: Double {
        compressedBytes > 0 ? Double(uncompressedBytes) / Double(compressedBytes) : 0
    }
}
