import SystemKit

/// Why a seed file cannot be verified or installed at all ("unusable input", exit status 2): no check can run on it.
/// Descriptions name the path and sizes only.
public enum SeedInputError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Nothing exists at the path.
    case notFound(path: String)
    /// The path names a directory, device or other non-regular file.
    case notARegularFile(path: String)
    /// The file exists but cannot be read (`errno`).
    case unreadable(path: String, errno: Int32)
    /// The file does not start with the SQLite 3 header (nor with a zstd frame).
    case notSQLite(path: String)
    /// The file is shorter than its own header says, or not a whole number of pages.
    case truncated(path: String, bytes: Int64, expectedBytes: Int64)
    /// The file is a zstd frame that could not be unpacked (corrupt, truncated, over the size limit).
    case unpackFailed(path: String, reason: String)
    /// A temporary copy could not be made (disk full, directory not writable).
    case temporaryFile(reason: String)

    /// Stable snake_case name of the rule.
    public var rule: String {
        switch self {
        case .notFound: "not_found"
        case .notARegularFile: "not_a_regular_file"
        case .unreadable: "unreadable"
        case .notSQLite: "not_sqlite"
        case .truncated: "truncated"
        case .unpackFailed: "unpack_failed"
        case .temporaryFile: "temporary_file"
        }
    }

    public var description: String {
        switch self {
        case .notFound(let path): "\(path): no such file"
        case .notARegularFile(let path): "\(path): not a regular file"
        case .unreadable(let path, let errno): SystemError(operation: "read", path: path, code: errno).description
        case .notSQLite(let path): "\(path): not an SQLite 3 database (wrong header)"
        case .truncated(let path, let bytes, let expected):
            "\(path): truncated (\(bytes) bytes, the header describes \(expected))"
        case .unpackFailed(let path, let reason): "\(path): cannot be unpacked (\(reason))"
        case .temporaryFile(let reason): "cannot make a temporary copy (\(reason))"
        }
    }
}
