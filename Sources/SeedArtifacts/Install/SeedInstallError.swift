import SystemKit

/// Why ``SeedInstaller`` installed nothing. Whatever the case, the destination is untouched and no temporary file
/// is left behind (except with ``cleanupFailed``, which names it).
public indirect enum SeedInstallError: Error, Sendable, CustomStringConvertible {
    /// A file (or an SQLite sidecar of one) already exists at the destination: a database is never overwritten.
    case destinationExists(path: String)
    /// The seed file cannot be used at all (missing, not SQLite, truncated, a zstd frame that does not unpack).
    case unusableSeed(SeedInputError)
    /// The seed failed checks: the publication checks (§6) or the device installer's validation (§7.1).
    case invalidSeed(SeedVerificationReport)
    /// A file operation failed.
    case io(operation: String, path: String, errno: Int32)
    /// The install failed with `cause`, and its temporary file at `path` could not be removed either.
    case cleanupFailed(path: String, errno: Int32, cause: SeedInstallError)

    /// Stable snake_case name of the rule.
    public var rule: String {
        switch self {
        case .destinationExists: "destination_exists"
        case .unusableSeed(let error): "unusable_seed.\(error.rule)"
        case .invalidSeed: "invalid_seed"
        case .io: "io"
        case .cleanupFailed: "cleanup_failed"
        }
    }

    /// The findings of an invalid seed; empty for the other cases.
    public var findings: [SeedFinding] {
        if case .invalidSeed(let report) = self { return report.findings }
        if case .cleanupFailed(_, _, let cause) = self { return cause.findings }
        return []
    }

    public var description: String {
        switch self {
        case .destinationExists(let path): "\(path) already exists; an existing database is never overwritten"
        case .unusableSeed(let error): "the seed is unusable: \(error)"
        case .invalidSeed(let report): "the seed failed \(report.findings.count) checks"
        case .io(let operation, let path, let errno):
            SystemError(operation: operation, path: path, code: errno).description
        case .cleanupFailed(let path, let errno, let cause):
            "\(cause); the temporary file \(path) could not be removed either: \(SystemError.reason(for: errno))"
        }
    }
}
