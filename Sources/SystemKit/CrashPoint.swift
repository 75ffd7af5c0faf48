import Foundation
import Synchronization

/// Named durable boundaries where a test kills the process: `SEEDKIT_CRASH_AT=<name>[:<n>]` kills it with SIGKILL
/// the n-th time (default: the first) the boundary `name` is reached. With `SEEDKIT_CRASH_SIGNAL=TERM` (or `INT`)
/// the boundary raises that signal on the reaching thread instead, so a cancellation test interrupts a run at an
/// exact point without racing it (``Interruption``'s handler has run when `raise` returns); `STOP` stops the
/// process there, holding whatever it holds, until the test sends SIGCONT (a second process meets its locks).
///
/// Crash tests use it to prove that a kill at any boundary leaves committed state only: no partially published
/// file, no half-applied page. The variable is read once per process; unset, reaching a boundary costs one
/// comparison. The client engine's boundaries are listed by `SyncCrashPoint`; the seed tools name theirs
/// (`export.*`, `install.*`) where they are reached.
package enum CrashPoint {
    /// Kills the process when `name` is the configured boundary and this is its configured occurrence.
    package static func reached(_ name: String) {
        guard let target, target.name == name else { return }
        if hits.add(1, ordering: .relaxed).newValue == target.occurrence {
            if let signal { raise(signal) } else { kill(getpid(), SIGKILL) }
        }
    }

    /// The signal `SEEDKIT_CRASH_SIGNAL` names (`TERM`, `INT`, `STOP`), or nil for SIGKILL.
    private static let signal: Int32? = {
        switch ProcessInfo.processInfo.environment["SEEDKIT_CRASH_SIGNAL"] {
        case "TERM": SIGTERM
        case "INT": SIGINT
        case "STOP": SIGSTOP
        default: nil
        }
    }()

    /// The configured boundary and occurrence, read once per process.
    private static let target: (name: String, occurrence: Int)? = {
        guard let text = ProcessInfo.processInfo.environment["SEEDKIT_CRASH_AT"], !text.isEmpty else { return nil }
        let parts = text.split(separator: ":", maxSplits: 1).map(String.init)
        guard let name = parts.first else { return nil }
        return (name, parts.count > 1 ? max(1, Int(parts[1]) ?? 1) : 1)
    }()

    /// How often the configured boundary was reached in this process.
    private static let hits = Atomic<Int>(0)
}
