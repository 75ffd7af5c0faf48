import SQLiteKit
import SynchroStore
import SynchroProtocol

/// One complete sync cycle in the contract's order (`spec/wire-protocol.md` §10.3, ARCHITECTURE.md "Headless
/// sync"): connect → renew batches awaiting renewal → push every eligible sealed batch until the queue is
/// empty → rebuild every scope without a cursor → pull to the head → rebuild scopes the pull made
/// rebuild-required (bounded passes).
///
/// Retryable failures (429, 503 including `capture_pending`, a lost response) repeat the exact same request
/// after the injected `delay`, at least the server's `Retry-After`. Each failure is first recorded durably
/// (``SyncBackoff``: attempt count and next eligible time), a success of that work clears the record, and a
/// cycle starts by waiting for a stored deadline, so a restarted engine never retries early. 409
/// `client_generation_expired` and
/// 422 `schema_mismatch` reconnect and resume; 409 `rebuild_restart_required` starts a new rebuild attempt.
/// Everything else stops the cycle with a typed ``SyncCycleError``; committed pages and batches stay committed.
///
/// A stored blocking error (`spec/client-store.md` §4.12) refuses every run before anything is sent or changed
/// (``SyncCycleError/blocked(operation:code:recoveryAction:)``), whichever entry point started it: only its
/// recovery action lifts it (``runSchemaReset()`` for `schema_reset`, ``acknowledgeBlockingError()`` for `retry`).
public struct SyncCycle: Sendable {
    /// Bounds and sizes of a cycle.
    public struct Configuration: Sendable, Equatable {
        /// Retry of retryable failures.
        public var retry: SyncRetryPolicy
        /// Most ungrouped mutations per sealed batch.
        public var batchSize: Int
        /// Rebuild passes after pulls that left scopes rebuild-required.
        public var maxRebuildPasses: Int
        /// New attempts of one scope after `rebuild_restart_required` or a final checksum mismatch.
        public var maxRebuildRestarts: Int
        /// Reconnects after a generation or schema gate refused a request.
        public var maxReconnects: Int
        /// Pages one pull phase may apply, and one rebuild attempt of a scope: a server that always answers
        /// `has_more` (or never a final rebuild page) ends the cycle with `page_limit` instead of keeping it
        /// going. 100,000 pages of up to 1000 rows: 10⁸ rows, far beyond a device's data.
        public var maxPages: Int

        /// Creates a configuration.
        public init(
            retry: SyncRetryPolicy = SyncRetryPolicy(), batchSize: Int = 100, maxRebuildPasses: Int = 3,
            maxRebuildRestarts: Int = 3, maxReconnects: Int = 2, maxPages: Int = 100_000
        ) {
            self.maxPages = maxPages
            self.retry = retry
            self.batchSize = batchSize
            self.maxRebuildPasses = maxRebuildPasses
            self.maxRebuildRestarts = maxRebuildRestarts
            self.maxReconnects = maxReconnects
        }
    }

    /// Store, transport, fixed request members and the page limit of pulls and new rebuild attempts.
    public let context: SyncContext
    /// Bounds of the cycle.
    public let configuration: Configuration
    /// Waits before a retry. Injected so that tests record delays instead of sleeping; hosts pass a real sleep.
    public let delay: @Sendable (Duration) -> Void
    /// Receives progress events, synchronously, on the calling thread.
    public let events: @Sendable (SyncEvent) -> Void
    /// Source of the retry jitter.
    public let random: RandomSource
    /// Asked before every state transition and after every wait: once true, the cycle stops at that step
    /// boundary with ``SyncCycleError/cancelled`` and ends in `stopped`, leaving every committed state as it is
    /// (client contract, "Stop or cancellation").
    public let isCancelled: @Sendable () -> Bool
    /// The client state machine the cycle drives (`spec/wire-protocol.md` §10), readable while it runs. It
    /// persists across runs of this cycle value (and of every cycle given the same status): a run after `error`
    /// or `stopped` starts with the explicit `→ local_ready`, a run after `backoff` resumes by reconnecting.
    public let status: SyncStatus

    /// Creates a cycle. Deadlines are read from the store's clock (``ClientStoreConfiguration/clock``).
    public init(
        context: SyncContext, configuration: Configuration = Configuration(),
        delay: @escaping @Sendable (Duration) -> Void, events: @escaping @Sendable (SyncEvent) -> Void = { _ in },
        random: RandomSource = .system, isCancelled: @escaping @Sendable () -> Bool = { false },
        status: SyncStatus = SyncStatus()
    ) {
        self.context = context
        self.configuration = configuration
        self.delay = delay
        self.events = events
        self.random = random
        self.isCancelled = isCancelled
        self.status = status
    }

    /// Runs the cycle once and returns what it did. A failure leaves ``status`` in `error`, or in `backoff` when
    /// the retries of this cycle ran out (the durable record says when to resume).
    public func run() throws(SyncCycleError) -> SyncSummary {
        try run(CycleRun(cycle: self))
    }

    /// Runs the cycle as a long-lived host does between its cycles (``SynchroDatabase``): while ``status`` is
    /// still `ready` from the previous run the connection stands, so the cycle goes straight to push, rebuild and
    /// pull — a steady cycle with nothing to do is one pull. A generation or schema refusal reconnects as in any
    /// run; from any other state this is ``run()``.
    func runConnected() throws(SyncCycleError) -> SyncSummary {
        try run(CycleRun(cycle: self, reuseConnection: true))
    }

    /// Runs one cycle that, after connect and push, starts a new rebuild attempt of each scope in `scopes` (every
    /// assigned scope when nil) through the durable rebuild path: the scope's attempt and page receipts are
    /// discarded and its cursor and checksum invalidated in one transaction, then it is rebuilt under a new
    /// rebuild ID before the pull (`spec/wire-protocol.md` §6.4, "explicit restart policy"). A scope the store
    /// does not have fails the cycle with ``SyncCycleError/scopeNotAssigned(scope:)`` before anything changes.
    public func run(rebuilding scopes: [String]?) throws(SyncCycleError) -> SyncSummary {
        try run(CycleRun(cycle: self, explicitRebuild: .some(scopes)))
    }

    /// Runs one cycle whose connect is the explicit `schema_reset` recovery of a stored `unsupported` error
    /// (``ConnectExchange/resetSchema()``, `spec/wire-protocol.md` §10.3): the reset migration, then push, the
    /// rebuild of every assigned scope and the pull, as after any `rebuild_local`. Fails with
    /// ``SyncCycleError/schemaResetNotPending`` before any request when no such error is stored.
    public func runSchemaReset() throws(SyncCycleError) -> SyncSummary {
        try run(CycleRun(cycle: self, schemaReset: true))
    }

    /// The explicit `retry` recovery of a stored blocking error (`spec/wire-protocol.md` §10.2: `error →
    /// local_ready` needs an explicit retry action, never a timer): deletes the error when its recovery action is
    /// `retry`, so the next run may sync; nothing else changes. Returns whether an error was cleared. A stored
    /// error with another recovery action stays and fails with
    /// ``SyncCycleError/blocked(operation:code:recoveryAction:)``.
    @discardableResult
    public func acknowledgeBlockingError() throws(SyncCycleError) -> Bool {
        let outcome: (stored: Bool, remaining: ClientInspection.BlockingError?)
        do {
            outcome = try context.store.applySync { connection in
                guard let stored = try BlockingErrorStore.stored(on: connection) else {
                    return (false, ClientInspection.BlockingError?.none)
                }
                guard stored.recoveryAction == "retry" else { return (true, stored) }
                try connection.run("DELETE FROM _synchro_blocking_error WHERE singleton = 1")
                return (true, nil)
            }
        } catch {
            throw .sync(phase: .connect, error)
        }
        if let remaining = outcome.remaining {
            throw .blocked(
                operation: remaining.operation, code: remaining.code, recoveryAction: remaining.recoveryAction)
        }
        return outcome.stored
    }

    /// Runs cycles until one ends current: no sealed batch or unsealed intent left to push and every scope with
    /// a cursor and a verified checksum. Returns the summary of every cycle; fails with
    /// ``SyncCycleError/notCurrent(cycles:)`` when `maxCycles` cycles did not get there.
    public func runUntilCurrent(maxCycles: Int = 10) throws(SyncCycleError) -> [SyncSummary] {
        var summaries: [SyncSummary] = []
        while summaries.count < max(1, maxCycles) {
            summaries.append(try run())
            if try isCurrent() { return summaries }
        }
        throw .notCurrent(cycles: summaries.count)
    }

    /// Whether nothing is left to push and every local scope has a cursor and a verified checksum.
    public func isCurrent() throws(SyncCycleError) -> Bool {
        do {
            return try context.store.readSyncState { connection in
                let pushWork = try connection.scalar(CycleRun.pushWorkSQL)?.integerValue == 1
                let unhealthy = try connection.scalar(
                    "SELECT count(*) FROM _synchro_scopes WHERE cursor IS NULL OR checksum IS NULL"
                )?.integerValue ?? 0
                return !pushWork && unhealthy == 0
            }
        } catch {
            throw .sync(phase: .pull, error)
        }
    }

    private func run(_ run: CycleRun) throws(SyncCycleError) -> SyncSummary {
        do {
            try run.run()
        } catch {
            run.fail(error)
            run.finishCounts()
            throw error
        }
        run.finishCounts()
        return run.summary
    }
}
