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

        /// Creates a configuration.
        public init(
            retry: SyncRetryPolicy = SyncRetryPolicy(), batchSize: Int = 100, maxRebuildPasses: Int = 3,
            maxRebuildRestarts: Int = 3, maxReconnects: Int = 2
        ) {
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

/// The mutable state of one running cycle.
private final class CycleRun {
    let cycle: SyncCycle
    let transport: MeteredTransport
    let context: SyncContext
    var summary = SyncSummary()
    var verified: Set<String> = []

    /// Scopes to restart once after push (`.some(nil)`: every scope); nil for a normal cycle.
    private var explicitRebuild: [String]??
    /// Whether the next connect is the explicit schema reset.
    private var schemaReset: Bool

    init(cycle: SyncCycle, explicitRebuild: [String]?? = nil, schemaReset: Bool = false) {
        self.cycle = cycle
        self.explicitRebuild = explicitRebuild
        self.schemaReset = schemaReset
        transport = MeteredTransport(cycle.context.transport)
        let base = cycle.context
        context = SyncContext(
            store: base.store, transport: transport, platform: base.platform, appVersion: base.appVersion,
            pageLimit: base.pageLimit)
    }

    var configuration: SyncCycle.Configuration { cycle.configuration }

    func run() throws(SyncCycleError) {
        summary.states = [cycle.status.state]
        // A reset interrupted after it was applied still counts: running the same command again finishes it.
        if schemaReset, try !resetPending(), try !resetApplied() { throw .schemaResetNotPending }
        try refuseWhileBlocked()
        if [.uninitialized, .error, .stopped].contains(cycle.status.state) {
            try enter(.localReady)
        }
        // An interrupted schema migration is resumed (or rolled back) before any request (client-store §11).
        try mapping(.connect) { () throws(SyncError) in _ = try SchemaMigrationJournal.recover(in: context.store) }
        // A resumed reset already recovered the error: the connect is then an ordinary one.
        if schemaReset, try !resetPending() { schemaReset = false }
        try honourStoredBackoff()
        try connect()
        var reconnects = 0
        while true {
            do throws(SyncCycleError) {
                try pushRebuildPull()
                // A migration whose affected scopes all verified again is finished.
                try mapping(.pull) { () throws(SyncError) in
                    try SchemaMigrationJournal.clearIfFinished(in: context.store)
                }
                return
            } catch {
                guard let (phase, code) = Self.reconnectReason(error) else { throw error }
                guard reconnects < configuration.maxReconnects else {
                    throw .reconnectLimit(phase: phase, code: code)
                }
                reconnects += 1
                try connect()
            }
        }
    }

    /// After a failure: `error`, unless the cycle stopped while waiting in `backoff` (retries used up).
    func fail(_ error: SyncCycleError) {
        if case .retriesExhausted = error, cycle.status.state == .backoff { return }
        if case .cancelled = error {
            if cycle.status.state != .stopped { try? cycle.status.transition(to: .stopped) }
            return
        }
        if cycle.status.state != .error { try? enter(.error) }
    }

    func finishCounts() {
        summary.connectRequests = transport.requests("/sync/connect")
        summary.pushRequests = transport.requests("/sync/push")
        summary.pullRequests = transport.requests("/sync/pull")
        summary.rebuildRequests = transport.requests("/sync/rebuild")
        summary.scopesVerified = verified.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }

    /// The steps after connect; a generation or schema refusal surfaces for `run` to reconnect and repeat them.
    private func pushRebuildPull() throws(SyncCycleError) {
        try push()
        if let scopes = explicitRebuild {
            try restart(scopes)
            explicitRebuild = nil
        }
        try rebuild(try scopesWithoutCursor())
        var passes = 0
        while true {
            let required = try pull()
            guard !required.isEmpty else { return }
            guard passes < configuration.maxRebuildPasses else { throw .rebuildLimit(scope: required[0]) }
            passes += 1
            try rebuild(required)
        }
    }

    // MARK: Phases

    /// Re-checks the seed receipts once, then connects, repeating only the exchange after a retryable failure.
    private func connect() throws(SyncCycleError) {
        try enter(.connecting)
        events(.phaseStarted(.connect))
        let exchange = ConnectExchange(context: context)
        let rejected = try mapping(.connect) { () throws(SyncError) in try exchange.checkSeedReceipts() }
        summary.seedReceipts += rejected
        let reset = schemaReset
        let outcome = try retrying(.connect) { () throws(SyncError) in try exchange.send(schemaReset: reset) }
        schemaReset = false
        summary.seedReceipts += outcome.seedReceipts
        summary.seedReceipts.sort { $0.scopeID.utf8Precedes($1.scopeID) }
        // The manifest was applied in the transaction that installed the response (§10.3: `replace` and
        // `rebuild_local` pass through `schema_applying`).
        if outcome.schemaAction != "none" {
            try enter(.schemaApplying)
            events(.schemaApplied(action: outcome.schemaAction))
        }
        try enter(.ready)
        events(.phaseFinished(.connect))
    }

    /// Pushes sealed batches one at a time until nothing is sendable, renewing a `renewal_required` batch first.
    private func push() throws(SyncCycleError) {
        guard try hasPushWork() else { return }
        let exchange = PushExchange(store: context.store, transport: transport)
        try enter(.pushing)
        events(.phaseStarted(.push))
        var attempt = 0
        while true {
            try renewIfNeeded(exchange)
            let batch: SealedBatch?
            let outcome: PushExchange.Outcome?
            do {
                batch = try BatchSealer(store: context.store, batchSize: configuration.batchSize).nextBatch()
                outcome = try batch.map { (batch) throws(PushError) in try exchange.send(batch) }
            } catch .transport {
                // A lost response: the sealed batch is unchanged and is re-sent byte for byte.
                attempt += 1
                try scheduleRetry(.push, attempt: attempt, status: nil)
                continue
            } catch {
                throw .push(error)
            }
            switch outcome {
            case nil:
                try enter(.ready)
                events(.phaseFinished(.push))
                return
            case .reconciled(let result)?:
                try enter(.pushing)
                attempt = 0
                let count = result.applied + result.conflicts + result.rejectedTerminal
                summary.mutationsPushed += count
                summary.mutationsAccepted += result.applied
                summary.mutationsRejected += result.conflicts + result.rejectedTerminal
                events(.pageApplied(phase: .push, scope: nil, rows: count))
                if let batch { try publishOutcomes(of: batch) }
            case .retryable(let status, _)?:
                attempt += 1
                try scheduleRetry(.push, attempt: attempt, status: status)
            case .renewalRequired(let code)?:
                // Surfaced as the refusal it was, so `run` reconnects; the renewal then runs before the next push.
                throw .sync(phase: .push, .http(status: code == "schema_mismatch" ? 422 : 409, code: code))
            }
        }
    }

    /// One event per reconciled mutation of `batch`, in request order, with its stable ID and the server's code.
    private func publishOutcomes(of batch: SealedBatch) throws(SyncCycleError) {
        let outcomes = try mapping(.push) { () throws(SyncError) in
            try context.store.readSyncState { connection in
                try connection.query("""
                    SELECT entry.mutation_id, entry.lifecycle_state, rejection.code
                    FROM _synchro_push_batch_members AS member
                    JOIN _synchro_pending_changes AS entry ON entry.mutation_id = member.mutation_id
                    LEFT JOIN _synchro_rejected_mutations AS rejection ON rejection.mutation_id = member.mutation_id
                    WHERE member.batch_id = ? ORDER BY member.ordinal
                    """, [.text(batch.batchID)]) { row in
                    (try row.text(at: 0), try row.text(at: 1), row.isNull(at: 2) ? "" : try row.text(at: 2))
                }
            }
        }
        for (mutationID, state, code) in outcomes {
            if state == MutationLifecycleState.accepted.rawValue {
                events(.mutationAccepted(mutationID: mutationID))
            } else if state == MutationLifecycleState.rejected.rawValue {
                events(.mutationRejected(mutationID: mutationID, code: code))
            }
        }
    }

    /// After a reconnect, the batch the server refused gets its successor before anything else is sent.
    private func renewIfNeeded(_ exchange: PushExchange) throws(SyncCycleError) {
        let waiting: Int64
        do {
            waiting = try context.store.readSyncState { connection in
                try connection.scalar(
                    "SELECT count(*) FROM _synchro_push_batches WHERE state = 'renewal_required'")?.integerValue ?? 0
            }
        } catch {
            throw .sync(phase: .renew, error)
        }
        guard waiting > 0 else { return }
        events(.phaseStarted(.renew))
        do {
            _ = try exchange.renewBatch()
        } catch {
            throw .push(error)
        }
        summary.batchesRenewed += 1
        events(.phaseFinished(.renew))
    }

    /// Rebuilds `scopes` one at a time, each until its final page verifies.
    private func rebuild(_ scopes: [String]) throws(SyncCycleError) {
        guard !scopes.isEmpty else { return }
        try enter(.rebuilding)
        events(.phaseStarted(.rebuild))
        let applier = RebuildApplier(context: context)
        // The next page is requested while this one is applied; nothing is in flight once the rebuild returns.
        let ahead = RequestAhead<RebuildApplier.ReceivedPage>(isCancelled: cycle.isCancelled)
        defer { ahead.drain() }
        // Pages commit without checkpointing; checkpoints run beside the engine (WALCheckpointer).
        let bulk = try mapping(.rebuild) { () throws(SyncError) in
            try SyncExchange.mapping { try context.store.beginBulkApply() }
        }
        defer { context.store.endBulkApply(bulk) }
        for scope in scopes {
            var restarts = 0
            events(.rebuildRequested(scope: scope))
            try mapping(.rebuild) { () throws(SyncError) in _ = try applier.start(scope: scope) }
            // The rows each page writes are read back beside the engine, for finality.
            var check = try mapping(.rebuild) { () throws(SyncError) in try applier.rowCheck() }
            while true {
                let isFinal: Bool
                let rows: Int
                do throws(SyncCycleError) {
                    (isFinal, rows) = try retrying(.rebuild) { () throws(SyncError) in
                        try applier.runPage(scope: scope, ahead: ahead, check: check)
                    }
                } catch {
                    guard Self.needsNewAttempt(error), restarts < configuration.maxRebuildRestarts else {
                        if Self.needsNewAttempt(error) { throw .rebuildLimit(scope: scope) }
                        throw error
                    }
                    restarts += 1
                    try newAttempt(scope: scope, applier: applier)
                    check = try mapping(.rebuild) { () throws(SyncError) in try applier.rowCheck() }
                    continue
                }
                context.store.boundLog(bulk)
                summary.rowsApplied += rows
                events(.pageApplied(phase: .rebuild, scope: scope, rows: rows))
                try enter(.rebuilding)
                if isFinal { break }
            }
            summary.scopesRebuilt.append(scope)
            verified.insert(scope)
            events(.scopeVerified(scope: scope))
            events(.rebuildCompleted(scope: scope))
        }
        try enter(.ready)
        events(.phaseFinished(.rebuild))
    }

    /// Pulls pages until a terminal page; returns the scopes it left rebuild-required.
    /// Pulls pages until a terminal page; returns the scopes it left rebuild-required. Ends in `ready` when none
    /// is, and stays in `pulling` otherwise (the rebuild follows directly, §10.3).
    private func pull() throws(SyncCycleError) -> [String] {
        try enter(.pulling)
        events(.phaseStarted(.pull))
        let applier = PullApplier(context: context)
        while true {
            let outcome = try retrying(.pull) { () throws(SyncError) in try applier.runPage() }
            summary.rowsApplied += outcome.rows
            events(.pageApplied(phase: .pull, scope: nil, rows: outcome.rows))
            for scope in outcome.verifiedScopes { verified.insert(scope) }
            guard !outcome.hasMore else {
                try enter(.pulling)
                continue
            }
            if outcome.rebuildRequired.isEmpty { try enter(.ready) }
            events(.phaseFinished(.pull))
            return outcome.rebuildRequired
        }
    }

    // MARK: Helpers

    private func events(_ event: SyncEvent) {
        cycle.events(event)
    }

    private func scopesWithoutCursor() throws(SyncCycleError) -> [String] {
        try mapping(.rebuild) { () throws(SyncError) in
            try context.store.readSyncState { connection in
                try ScopeStore.all(on: connection).filter { $0.cursor == nil }.map(\.scopeID)
            }
        }
    }

    /// The explicit restart of `scopes` (all when nil) in one transaction: attempts and page receipts
    /// discarded, cursor and checksum invalidated, so the rebuild step starts each under a new rebuild ID.
    private func restart(_ scopes: [String]?) throws(SyncCycleError) {
        let missing = try mapping(.rebuild) { () throws(SyncError) -> String? in
            try context.store.applySync { connection -> String? in
                let known = try ScopeStore.all(on: connection).map(\.scopeID)
                let named = scopes ?? known
                if let missing = named.first(where: { !known.contains($0) }) { return missing }
                for scope in named {
                    try connection.run("DELETE FROM _synchro_rebuild_page_receipts WHERE scope_id = ?", [.text(scope)])
                    try connection.run("DELETE FROM _synchro_rebuild_attempts WHERE scope_id = ?", [.text(scope)])
                    try ScopeStore.invalidate(scope, on: connection)
                }
                return nil
            }
        }
        if let missing { throw .scopeNotAssigned(scope: missing) }
    }

    /// Discards the scope's attempt (and its page receipts) so that `start` draws a new rebuild ID with a null
    /// cursor (§6.4: only that scope's continuation is discarded).
    private func newAttempt(scope: String, applier: RebuildApplier) throws(SyncCycleError) {
        try mapping(.rebuild) { () throws(SyncError) in
            try context.store.applySync { connection in
                try connection.run("DELETE FROM _synchro_rebuild_page_receipts WHERE scope_id = ?", [.text(scope)])
                try connection.run("DELETE FROM _synchro_rebuild_attempts WHERE scope_id = ?", [.text(scope)])
            }
            _ = try applier.start(scope: scope)
        }
    }

    /// Runs one exchange, repeating it after retryable failures as the policy allows.
    private func retrying<Value>(
        _ phase: SyncPhase, _ body: () throws(SyncError) -> Value
    ) throws(SyncCycleError) -> Value {
        var attempt = 0
        while true {
            attempt += 1
            do {
                return try body()
            } catch {
                switch error {
                case .http(let status, _) where status == 429 || status == 503:
                    try scheduleRetry(phase, attempt: attempt, status: status)
                case .transport:
                    try scheduleRetry(phase, attempt: attempt, status: nil)
                default:
                    throw .sync(phase: phase, error)
                }
            }
        }
    }

    private func mapping<Value>(
        _ phase: SyncPhase, _ body: () throws(SyncError) -> Value
    ) throws(SyncCycleError) -> Value {
        do {
            return try body()
        } catch {
            throw .sync(phase: phase, error)
        }
    }

    /// Records the failure durably, then waits before the next attempt, or fails once the policy's attempts of
    /// this cycle are used up (the record keeps the next eligible time for the next cycle).
    private func scheduleRetry(_ phase: SyncPhase, attempt: Int, status: Int?) throws(SyncCycleError) {
        let random = cycle.random.next()
        let retryAfter = transport.lastRetryAfter
        var wait = configuration.retry.delay(afterAttempt: attempt, retryAfter: retryAfter, random: random)
        var durableAttempt = attempt
        if let (state, identity) = try workIdentity(phase) {
            let recorded = try mapping(phase) { () throws(SyncError) in
                try BackoffStore.recordFailure(
                    state: state, workIdentity: identity, status: status, retryAfter: retryAfter,
                    policy: configuration.retry, random: random,
                    now: context.store.configuration.clock.nowMilliseconds(), in: context.store)
            }
            (wait, durableAttempt) = (recorded.delay, recorded.record.attemptCount)
            SyncCrashPoint.backoffRecorded.reached()
        }
        let interrupted = cycle.status.state
        try enter(.backoff)
        guard attempt < configuration.retry.maxAttempts else {
            throw .retriesExhausted(phase: phase, attempts: attempt, status: status)
        }
        summary.retries += 1
        events(.retryScheduled(phase: phase, attempt: durableAttempt, status: status, delay: wait))
        sleep(wait)
        try enter(interrupted)
    }

    /// Moves the state machine, failing the cycle on a transition §10.2 forbids (an engine defect).
    private func enter(_ state: SyncState) throws(SyncCycleError) {
        if state != .error, state != .stopped, cycle.isCancelled() { throw .cancelled }
        do {
            try cycle.status.transition(to: state)
        } catch {
            throw .illegalTransition(error)
        }
        if summary.states.last != state { summary.states.append(state) }
    }

    /// Whether a sealed batch waits or unsealed intent exists (`spec/wire-protocol.md` §10.3 scheduler step 1).
    private func hasPushWork() throws(SyncCycleError) -> Bool {
        try mapping(.push) { () throws(SyncError) in
            try context.store.readSyncState { connection in
                try connection.scalar(Self.pushWorkSQL)?.integerValue == 1
            }
        }
    }

    /// Refuses the run while a blocking error is stored (`spec/client-store.md` §11), unless this run is that
    /// error's own recovery (the explicit reset of a `schema_reset` error). The state machine stays in, or
    /// enters, `error`: a refused run never passes through `local_ready` (§10.2 needs the condition remedied).
    private func refuseWhileBlocked() throws(SyncCycleError) {
        let stored = try mapping(.connect) { () throws(SyncError) in try BlockingErrorStore.stored(in: context.store) }
        guard let stored, !(schemaReset && stored.recoveryAction == "schema_reset") else { return }
        // `stopped` may only move to `local_ready`; from there the refusal enters `error` like any failure.
        if cycle.status.state == .stopped { try enter(.localReady) }
        throw .blocked(operation: stored.operation, code: stored.code, recoveryAction: stored.recoveryAction)
    }

    /// Whether an `unsupported` blocking error awaits the explicit reset.
    private func resetPending() throws(SyncCycleError) -> Bool {
        try mapping(.connect) { () throws(SyncError) in try SchemaUnsupportedRecord.stored(in: context.store) } != nil
    }

    /// Whether a reset migration is journaled (prepared, or applied with rebuilds still owed).
    private func resetApplied() throws(SyncCycleError) -> Bool {
        try mapping(.connect) { () throws(SyncError) in
            try context.store.readSyncState { connection in
                try connection.scalar(
                    "SELECT count(*) FROM _synchro_schema_migration WHERE is_schema_reset = 1")?.integerValue ?? 0
            }
        } > 0
    }

    /// 1 when a sealed batch waits or unsealed intent exists, else 0.
    static let pushWorkSQL = """
        SELECT EXISTS (SELECT 1 FROM _synchro_push_batches WHERE state IN ('pending', 'renewal_required'))
            OR EXISTS (SELECT 1 FROM _synchro_pending_changes WHERE lifecycle_state = 'unsealed')
        """

    /// Before any request: a stored retry deadline in the future is waited for (`spec/client-store.md` §11).
    private func honourStoredBackoff() throws(SyncCycleError) {
        let stored = try mapping(.connect) { () throws(SyncError) in
            try SyncExchange.mapping { try context.store.backoff() }
        }
        let now = context.store.configuration.clock.nowMilliseconds()
        guard let stored, stored.nextRetryAtMilliseconds > now else { return }
        let wait = Duration.milliseconds(stored.nextRetryAtMilliseconds - now)
        summary.retries += 1
        events(.retryScheduled(
            phase: Self.phase(of: stored.resumeState), attempt: stored.attemptCount,
            status: stored.classification.status, delay: wait))
        sleep(wait)
    }

    /// The resume state and exact work identity of the request that just failed in `phase`: the request body,
    /// or for push the pending batch ID. Nil when there is nothing to identify (renewal sends nothing).
    private func workIdentity(_ phase: SyncPhase) throws(SyncCycleError) -> (SyncBackoff.ResumeState, String)? {
        let state: SyncBackoff.ResumeState
        switch phase {
        case .connect: state = .connecting
        case .pull: state = .pulling
        case .rebuild: state = .rebuilding
        case .renew: return nil
        case .push:
            let batch = try mapping(.push) { () throws(SyncError) in
                try context.store.readSyncState { connection in
                    try connection.scalar(
                        "SELECT batch_id FROM _synchro_push_batches WHERE state = 'pending'")?.textValue
                }
            }
            return batch.map { (.pushing, $0) }
        }
        let body = transport.lastRequestBody
        return body.isEmpty ? nil : (state, String(decoding: body, as: UTF8.self))
    }

    /// Hands `duration` to the injected delay in pieces of at most one day (upstream chunks long sleeps).
    private func sleep(_ duration: Duration) {
        let day = Duration.seconds(86_400)
        var remaining = duration
        while remaining > day, !cycle.isCancelled() {
            cycle.delay(day)
            remaining -= day
        }
        if remaining > .zero, !cycle.isCancelled() { cycle.delay(remaining) }
    }

    private static func phase(of state: SyncBackoff.ResumeState) -> SyncPhase {
        switch state {
        case .connecting: .connect
        case .pushing: .push
        case .pulling: .pull
        case .rebuilding: .rebuild
        }
    }

    private static func needsNewAttempt(_ error: SyncCycleError) -> Bool {
        switch error {
        case .sync(_, .http(409, "rebuild_restart_required")), .sync(_, .rebuildChecksumMismatch): true
        default: false
        }
    }

    private static func reconnectReason(_ error: SyncCycleError) -> (SyncPhase, String)? {
        switch error {
        case .sync(let phase, .http(409, "client_generation_expired")): (phase, "client_generation_expired")
        case .sync(let phase, .http(422, "schema_mismatch")): (phase, "schema_mismatch")
        default: nil
        }
    }
}
