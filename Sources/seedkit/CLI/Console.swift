import Foundation
import SynchroHTTP

/// A command's output channels under its ``Verbosity``: results and errors always print; informational lines
/// (summaries, success messages) and progress displays are dropped by `--quiet`; detail lines appear only with
/// `--verbose`, on standard error, so that standard output — and every `--json` document — is the same with or
/// without it. Nothing printed through it may carry a credential, token, cursor or row value.
struct Console: Sendable {
    let verbosity: Verbosity
    /// The command, prefixed to detail lines (`export: scope catalog: 150 rows`).
    let command: String

    var isQuiet: Bool { verbosity == .quiet }
    var isVerbose: Bool { verbosity == .verbose }

    /// Whether a progress display may be drawn: not quiet, and standard error is a terminal.
    var drawsProgress: Bool { !isQuiet && isatty(STDERR_FILENO) == 1 }

    /// What the command was asked for, on standard output whatever the verbosity.
    func result(_ text: String) {
        Terminal.out(text)
    }

    /// A summary or success line on standard output, unless quiet.
    func info(_ text: String) {
        if !isQuiet { Terminal.out(Terminal.printable(text)) }
    }

    /// An informational message on standard error (`server stopped`), unless quiet.
    func notice(_ text: String) {
        if !isQuiet { Terminal.err(text) }
    }

    /// One line of detail on standard error, with `--verbose` only. On a terminal the line first clears a
    /// progress display that may be drawn there.
    func detail(_ line: @autoclosure () -> String) {
        guard isVerbose else { return }
        if isatty(STDERR_FILENO) == 1 { Terminal.progress("\r\u{1B}[K") }
        Terminal.err("\(command): \(line())\n")
    }

    /// `detail` with the time since `start` appended (`verified in 0.42 s`).
    func detail(_ what: String, since start: ContinuousClock.Instant) {
        detail(what, took: ContinuousClock.now - start)
    }

    /// `detail` with `duration` appended (`published seed.db.zst in 0.42 s`).
    func detail(_ what: String, took duration: Duration) {
        let (seconds, attoseconds) = duration.components
        detail("\(what) in \(PipelineText.seconds(Double(seconds) + Double(attoseconds) / 1e18))")
    }

    /// An error on standard error, whatever the verbosity.
    func error(_ text: String) {
        Terminal.err(text)
    }

    /// `url` as safe to print: without user information (`user:password@`), a query or a fragment.
    static func displayURL(_ url: String) -> String {
        NetworkFailure.displayURL(url)
    }
}
