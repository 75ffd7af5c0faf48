import Dispatch
import SynchroStore
import Synchronization

/// Where ``SynchroDatabase`` runs its sync cycles and waits between retries. The default runs them on one
/// background dispatch queue; tests inject a scheduler that runs work when the test says so and records waits
/// instead of sleeping.
public protocol SyncScheduler: Sendable {
    /// Runs `work` once, off the calling thread, no earlier than `delay` from now (`.zero`: as soon as possible).
    /// Cancelling the returned task before it starts means it never runs.
    func schedule(after delay: Duration, _ work: @escaping @Sendable () -> Void) -> SyncScheduledTask

    /// Blocks the calling background thread for `duration`, returning early once `signal` is stopped.
    func wait(for duration: Duration, signal: SyncStopSignal)
}

/// A scheduled piece of work that can still be cancelled.
public final class SyncScheduledTask: Sendable {
    private let cancellation: @Sendable () -> Void

    /// A task cancelled by `cancel`.
    public init(cancel: @escaping @Sendable () -> Void) {
        cancellation = cancel
    }

    /// Prevents the work from running if it has not started.
    public func cancel() {
        cancellation()
    }
}

/// The stop request of one armed sync lifecycle: set by `stopSync()`, it wakes a waiting retry and makes the
/// running cycle stop at its next step boundary.
public final class SyncStopSignal: Sendable {
    private let stopped = Mutex(false)
    private let semaphore = DispatchSemaphore(value: 0)

    /// A signal that is not stopped.
    public init() {}

    /// Whether the lifecycle was stopped.
    public var isStopped: Bool { stopped.withLock { $0 } }

    /// Stops the lifecycle and wakes a waiting thread.
    public func stop() {
        let first = stopped.withLock { value -> Bool in
            defer { value = true }
            return !value
        }
        if first { semaphore.signal() }
    }

    /// Waits up to `duration`; returns early (and leaves the signal stopped) once stopped.
    public func wait(for duration: Duration) {
        guard !isStopped else { return }
        let (seconds, attoseconds) = duration.components
        let nanoseconds = max(0, seconds).multipliedReportingOverflow(by: 1_000_000_000)
        let total = nanoseconds.overflow ? Int64.max : nanoseconds.partialValue + attoseconds / 1_000_000_000
        if semaphore.wait(timeout: .now() + .nanoseconds(Int(clamping: total))) == .success {
            // Keep the wake-up for any later waiter of this stopped lifecycle.
            semaphore.signal()
        }
    }
}

/// The default scheduler: one serial background queue per database.
public struct DispatchSyncScheduler: SyncScheduler {
    private let queue: DispatchQueue

    /// A scheduler on a new serial queue labelled `label`.
    public init(label: String = "synchro.sync") {
        queue = DispatchQueue(label: label, qos: .utility)
    }

    public func schedule(after delay: Duration, _ work: @escaping @Sendable () -> Void) -> SyncScheduledTask {
        let cancelled = CancelFlag()
        let (seconds, attoseconds) = delay.components
        let milliseconds = Int(clamping: max(0, seconds) * 1000 + attoseconds / 1_000_000_000_000_000)
        queue.asyncAfter(deadline: .now() + .milliseconds(milliseconds)) {
            if !cancelled.isSet { work() }
        }
        return SyncScheduledTask { cancelled.set() }
    }

    public func wait(for duration: Duration, signal: SyncStopSignal) {
        signal.wait(for: duration)
    }
}

/// A one-way flag shared between a scheduled block and its task.
private final class CancelFlag: Sendable {
    private let value = Mutex(false)

    var isSet: Bool { value.withLock { $0 } }

    func set() {
        value.withLock { $0 = true }
    }
}
