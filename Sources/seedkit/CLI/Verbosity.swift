/// How much a command prints besides its result, chosen by `--quiet` or `--verbose` (every command accepts both,
/// and they exclude each other).
enum Verbosity: Sendable {
    /// Only the requested data (query rows, digests, JSON documents, a failed check's findings) and errors.
    case quiet
    /// The default: the result, a summary, and a progress display when standard error is a terminal.
    case normal
    /// As normal, plus detail on standard error: steps, scopes, timings, the files and URLs used.
    case verbose

    /// The flags every parser accepts for it.
    static let flags: Set<String> = ["quiet", "verbose"]

    /// The choice the parsed `flags` make; both at once is a usage error.
    init(flags: Set<String>) throws(Arguments.UsageError) {
        switch (flags.contains("quiet"), flags.contains("verbose")) {
        case (true, true): throw Arguments.UsageError(message: "--quiet and --verbose exclude each other")
        case (true, false): self = .quiet
        case (false, true): self = .verbose
        case (false, false): self = .normal
        }
    }
}
