import Foundation

/// Named durable boundaries where a test can kill the process (`SEEDKIT_CRASH_AT=<name>[:<n>]` kills it
/// with SIGKILL at the n-th time, default the first, the boundary is reached). Crash tests use it to prove
/// that a kill at any boundary leaves no published or partially installed file; unset, it costs one
/// dictionary lookup per process.
public enum CrashPoint {
    private static let target: (name: String, count: Int)? = {
        guard let text = ProcessInfo.processInfo.environment["SEEDKIT_CRASH_AT"], !text.isEmpty else { return nil }
        let parts = text.split(separator: ":", maxSplits: 1).map(String.init)
        return (parts[0], parts.count > 1 ? max(1, Int(parts[1]) ?? 1) : 1)
    }()
    private static let hits = CrashCounter()

    /// Kills the process when `name` is the configured boundary and this is its configured occurrence.
    public static func reached(_ name: String) {
        guard let target, target.name == name else { return }
        if hits.increment() == target.count {
            kill(getpid(), SIGKILL)
        }
    }
}

private final class CrashCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0

    func increment() -> Int {
        lock.lock()
        defer { lock.unlock() }
        count += 1
        return count
    }
}
