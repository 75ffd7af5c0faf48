import Synchronization
import SynchroStore

/// The client states of `spec/wire-protocol.md` §10.1.
public enum SyncState: String, Sendable, CaseIterable {
    /// The process has not yet opened and validated the local database and sync metadata.
    case uninitialized
    /// Database, metadata, recovery records and capture controls are valid; nothing remote in flight.
    case localReady = "local_ready"
    /// `POST /sync/connect` in progress.
    case connecting
    /// An inline manifest and its migration are being applied; push and pull are paused.
    case schemaApplying = "schema_applying"
    /// Connect and schema work are done; the scheduler picks push, pull, rebuild or reconnect.
    case ready
    /// Sending or reconciling one sealed batch.
    case pushing
    /// Sending or applying one pull page.
    case pulling
    /// Sending or applying pages of one single-scope rebuild attempt.
    case rebuilding
    /// A retryable operation waits for its durable deadline; the interrupted state is kept.
    case backoff
    /// A non-retryable condition needs an explicit reset or retry.
    case error
    /// Scheduling and network work deliberately disabled; durable state intact.
    case stopped

    /// The targets §10.2 allows from this state (the complete table; every other pair is illegal). From
    /// `backoff` only the interrupted state or `connecting` is legal among the network states, which
    /// ``SyncStateMachine`` checks.
    public var allowedTargets: Set<SyncState> {
        switch self {
        case .uninitialized: [.localReady, .error, .stopped]
        case .localReady: [.connecting, .error, .stopped]
        case .connecting: [.schemaApplying, .ready, .backoff, .error, .stopped]
        case .schemaApplying: [.ready, .rebuilding, .error, .stopped]
        case .ready: [.connecting, .pushing, .pulling, .rebuilding, .error, .stopped]
        case .pushing: [.pushing, .ready, .pulling, .connecting, .backoff, .error, .stopped]
        case .pulling: [.pulling, .ready, .rebuilding, .connecting, .backoff, .error, .stopped]
        case .rebuilding: [.rebuilding, .ready, .connecting, .backoff, .error, .stopped]
        case .backoff: [.connecting, .pushing, .pulling, .rebuilding, .error, .stopped]
        case .error: [.localReady, .stopped]
        case .stopped: [.localReady]
        }
    }
}

/// A transition `spec/wire-protocol.md` §10.2 forbids: a non-retryable local contract error that changes no
/// durable record.
public struct IllegalTransition: Error, Sendable, Equatable, CustomStringConvertible {
    /// The state the machine was in (and stays in).
    public let from: SyncState
    /// The refused target.
    public let to: SyncState

    /// Creates the error.
    public init(from: SyncState, to: SyncState) {
        self.from = from
        self.to = to
    }

    public var description: String { "illegal sync state transition \(from.rawValue) → \(to.rawValue)" }
}

/// The client state machine (`spec/wire-protocol.md` §10): the current state and, while in `backoff`, the
/// interrupted state it may return to.
public struct SyncStateMachine: Sendable, Equatable {
    /// The current state.
    public private(set) var state: SyncState
    /// While in `backoff`: the state that was interrupted; nil otherwise.
    public private(set) var interrupted: SyncState?

    /// A machine in `uninitialized`, as a new process starts.
    public init() {
        state = .uninitialized
        interrupted = nil
    }

    /// Moves to `target`, or throws ``IllegalTransition`` and stays where it is. Entering `backoff` remembers
    /// the interrupted state; leaving it is legal only to that state, to `connecting`, `error` or `stopped`.
    public mutating func transition(to target: SyncState) throws(IllegalTransition) {
        guard state.allowedTargets.contains(target) else { throw IllegalTransition(from: state, to: target) }
        if state == .backoff, [.pushing, .pulling, .rebuilding].contains(target), target != interrupted {
            throw IllegalTransition(from: state, to: target)
        }
        interrupted = target == .backoff ? state : nil
        state = target
    }
}

/// The live state of a ``SyncCycle``, readable from any thread while the cycle runs, with observers told of
/// every change of state.
public final class SyncStatus: Sendable {
    private let machine = Mutex(SyncStateMachine())
    private let observers = SyncObservers<SyncState>()

    /// A status in `uninitialized`.
    public init() {}

    /// Calls `observer` with every new state (synchronously, on the thread that moved the machine) until the
    /// returned observation is cancelled.
    public func observe(_ observer: @escaping @Sendable (SyncState) -> Void) -> SyncObservation {
        observers.add(observer)
    }

    /// The current state.
    public var state: SyncState { machine.withLock { $0.state } }

    /// While in `backoff`: the interrupted state the cycle resumes; nil otherwise.
    public var interruptedState: SyncState? { machine.withLock { $0.interrupted } }

    /// A copy of the machine.
    public var snapshot: SyncStateMachine { machine.withLock { $0 } }

    func transition(to target: SyncState) throws(IllegalTransition) {
        let changed = try machine.withLock { (machine: inout SyncStateMachine) throws(IllegalTransition) -> Bool in
            let before = machine.state
            try machine.transition(to: target)
            return before != target
        }
        // Outside the lock: an observer may read the status.
        if changed { observers.notify(target) }
    }
}

/// A registration with an observer list; cancelling it (or releasing it) stops the calls.
public final class SyncObservation: Sendable {
    private let cancellation: Mutex<(@Sendable () -> Void)?>

    init(_ cancel: @escaping @Sendable () -> Void) {
        cancellation = Mutex(cancel)
    }

    deinit {
        cancel()
    }

    /// Stops the calls; later calls do nothing.
    public func cancel() {
        let cancel = cancellation.withLock { value -> (@Sendable () -> Void)? in
            defer { value = nil }
            return value
        }
        cancel?()
    }
}

/// Observers of values of one kind, called in registration order.
final class SyncObservers<Value: Sendable>: Sendable {
    private let entries = Mutex<(next: UInt64, list: [(id: UInt64, body: @Sendable (Value) -> Void)])>((0, []))

    func add(_ body: @escaping @Sendable (Value) -> Void) -> SyncObservation {
        let id = entries.withLock { entries -> UInt64 in
            entries.next += 1
            entries.list.append((entries.next, body))
            return entries.next
        }
        return SyncObservation { [weak self] in
            self?.entries.withLock { $0.list.removeAll { $0.id == id } }
        }
    }

    func notify(_ value: Value) {
        for observer in entries.withLock({ $0.list.map(\.body) }) { observer(value) }
    }
}
