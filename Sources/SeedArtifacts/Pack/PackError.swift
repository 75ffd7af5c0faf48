import SystemKit

/// Why a pack or unpack was refused; one case per rule, named by ``rule``.
///
/// No case carries file contents: only paths, sizes, limits, option values and libzstd's error name.
/// Whatever the case, nothing was published at the destination and the temporary file is gone.
public enum PackError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The compression level is outside 1...22.
    case invalidLevel(Int32)
    /// The worker count is outside 1...256.
    case invalidWorkerCount(Int)
    /// The output limit is not a positive number of bytes.
    case invalidOutputLimit(Int64)
    /// The input is not a regular file (a directory, a device, a pipe).
    case notRegularFile(path: String)
    /// The input changed size while it was packed, so the recorded content size would be wrong.
    case inputChanged(path: String)
    /// The input does not begin with the zstd frame magic `28 B5 2F FD`.
    case notZstd(path: String)
    /// The frame carries no content checksum, so damage to its content could go undetected.
    case missingContentChecksum
    /// The frame header declares more content than the output limit allows (checked before writing).
    case declaredSizeExceedsLimit(declared: UInt64, limit: Int64)
    /// The frame asks for a decoding window beyond the bounded-memory limit (2^27 bytes).
    case windowTooLarge
    /// The input ends before the frame does.
    case truncated
    /// The decompressed content does not match the frame's content checksum.
    case checksumMismatch
    /// libzstd rejected the frame as malformed; carries libzstd's error name.
    case corrupt(String)
    /// Bytes follow the end of the frame: a seed artifact is exactly one frame.
    case trailingData
    /// The output would exceed the limit; nothing was published.
    case outputLimitExceeded(limit: Int64)
    /// A packed seed's content is not a SQLite database (checked on its first 100 bytes, before writing them).
    case notSQLiteDatabase(reason: String)
    /// A packed seed's content runs past the database size its SQLite header declares.
    case exceedsDeclaredDatabaseSize(declared: Int64)
    /// The destination exists and overwriting was not requested.
    case outputExists(path: String)
    /// A SQLite sidecar (`-wal`, `-shm`, `-journal`) sits beside the database being packed or unpacked:
    /// SQLite would combine it with the database, so the bytes packed or unpacked are not the seed.
    case sidecarPresent(path: String)
    /// The unpacked content's SHA-256 is not the expected (signed) digest; nothing was published.
    case digestMismatch(expected: String)
    /// libzstd failed while compressing (for example an allocation failure); carries its error name.
    case compressionFailed(String)
    /// A system call failed: what was being done, on which path, and the `errno` text.
    case io(operation: String, path: String, errno: Int32)

    /// Stable snake_case name of the rule (for scripts and `--json`).
    public var rule: String {
        switch self {
        case .invalidLevel: "invalid_level"
        case .invalidWorkerCount: "invalid_worker_count"
        case .invalidOutputLimit: "invalid_output_limit"
        case .notRegularFile: "not_regular_file"
        case .inputChanged: "input_changed"
        case .notZstd: "not_zstd"
        case .missingContentChecksum: "missing_content_checksum"
        case .declaredSizeExceedsLimit: "declared_size_exceeds_limit"
        case .windowTooLarge: "window_too_large"
        case .truncated: "truncated_frame"
        case .checksumMismatch: "checksum_mismatch"
        case .corrupt: "corrupt_frame"
        case .trailingData: "trailing_data"
        case .outputLimitExceeded: "output_limit_exceeded"
        case .notSQLiteDatabase: "not_sqlite"
        case .exceedsDeclaredDatabaseSize: "exceeds_declared_database_size"
        case .outputExists: "output_exists"
        case .sidecarPresent: "sidecar_present"
        case .digestMismatch: "signed_digest_mismatch"
        case .compressionFailed: "compression_failed"
        case .io: "io"
        }
    }

    /// True when the input artifact itself is unusable (as opposed to the options, destination or system).
    public var isDamagedInput: Bool {
        switch self {
        case .notZstd, .missingContentChecksum, .declaredSizeExceedsLimit, .windowTooLarge, .truncated,
            .checksumMismatch, .corrupt, .trailingData, .outputLimitExceeded, .notSQLiteDatabase,
            .exceedsDeclaredDatabaseSize, .digestMismatch:
            true
        default:
            false
        }
    }

    /// What went wrong, without file contents.
    public var message: String {
        switch self {
        case .invalidLevel(let level):
            "compression level \(level) is outside 1...22"
        case .invalidWorkerCount(let count):
            "worker count \(count) is outside 1...256"
        case .invalidOutputLimit(let limit):
            "output limit \(limit) is not a positive number of bytes"
        case .notRegularFile(let path):
            "\(path) is not a regular file"
        case .inputChanged(let path):
            "\(path) changed size while it was being packed"
        case .notZstd(let path):
            "\(path) does not begin with a zstd frame"
        case .missingContentChecksum:
            "the zstd frame has no content checksum"
        case .declaredSizeExceedsLimit(let declared, let limit):
            "the frame declares \(declared) bytes of content, over the limit of \(limit) bytes"
        case .windowTooLarge:
            "the frame needs a decoding window larger than 128 MiB"
        case .truncated:
            "the input ends before the zstd frame does"
        case .checksumMismatch:
            "the decompressed content does not match the frame's content checksum"
        case .corrupt(let name):
            "the zstd frame is malformed (\(name))"
        case .trailingData:
            "bytes follow the end of the zstd frame"
        case .outputLimitExceeded(let limit):
            "the output would exceed the limit of \(limit) bytes"
        case .notSQLiteDatabase(let reason):
            "the packed content is not a SQLite database: \(reason)"
        case .exceedsDeclaredDatabaseSize(let declared):
            "the packed content runs past the \(declared) bytes its SQLite header declares"
        case .outputExists(let path):
            "\(path) exists; overwriting it was not requested"
        case .sidecarPresent(let path):
            "\(path) exists beside the database; SQLite would apply it"
        case .digestMismatch(let expected):
            "the unpacked content's SHA-256 is not the expected \(expected)"
        case .compressionFailed(let name):
            "compression failed (\(name))"
        case .io(let operation, let path, let code):
            SystemError(operation: operation, path: path, code: code).description
        }
    }

    public var description: String { "\(rule): \(message)" }

    /// A failed file operation of the output: an existing destination is ``outputExists(path:)``, anything else
    /// ``io(operation:path:errno:)``.
    init(_ error: SystemError) {
        self = error.isAlreadyExists ? .outputExists(path: error.path) : .io(
            operation: error.operation, path: error.path, errno: error.code)
    }
}
