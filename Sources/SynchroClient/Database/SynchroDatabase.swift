import SQLiteKit
import SynchroStore
import SynchroProtocol
import Synchronization

/// How a ``SynchroDatabase`` is opened and how it syncs.
public struct SynchroDatabaseConfiguration: Sendable {
    /// The database file (created when missing).
    public var path: String
    /// The client ID the database is bound to.
    public var clientID: String
    /// Where sync requests go.
    public var transport: any SyncTransport
    /// `platform` of connect.
    public var platform: String
    /// `app_version` of connect (SemVer).
    public var appVersion: String
    /// Pull and rebuild page limit (1…1000).
    public var pageLimit: Int64
    /// Batch size, retry policy and bounds of each cycle.
    public var cycle: SyncCycle.Configuration
    /// Time between cycles while sync is started and healthy.
    public var syncInterval: Duration
    /// Where cycles run and retries wait.
    public var scheduler: any SyncScheduler
    /// Source of the UUIDs the engine generates.
    public var uuids: UUIDSource
    /// The engine's wall clock (timestamps, retry deadlines).
    public var clock: ClientClock
    /// Source of the retry jitter.
    public var random: RandomSource

    /// A configuration with upstream defaults: 30 s between cycles, a background dispatch queue, random UUIDs,
    /// the system clock.
    public init(
        path: String, clientID: String, transport: any SyncTransport, platform: String = "ios",
        appVersion: String = "1.0.0", pageLimit: Int64 = 100, cycle: SyncCycle.Configuration = .init(),
        syncInterval: Duration = .seconds(30), scheduler: any SyncScheduler = DispatchSyncScheduler(),
        uuids: UUIDSource = .random, clock: ClientClock = .system, random: RandomSource = .system
    ) {
        self.path = path
        self.clientID = clientID
        self.transport = transport
        self.platform = platform
        self.appVersion = appVersion
        self.pageLimit = pageLimit
        self.cycle = cycle
        self.syncInterval = syncInterval
        self.scheduler = scheduler
        self.uuids = uuids
        self.clock = clock
        self.random = random
    }
}

/// The current sync state and bounded diagnostics (``SynchroDatabase/getSyncStatus()``). Counts, states and
/// typed errors only: never a cursor, token, checksum or row value.
public struct SyncStatusSnapshot: Sendable, Equatable {
    /// The client state (`spec/wire-protocol.md` §10.1).
    public let state: SyncState
    /// While in `backoff`: the interrupted state.
    public let interruptedState: SyncState?
    /// Whether sync is started (armed), whatever the current state.
    public let isStarted: Bool
    /// Unresolved ledger entries.
    public let pendingMutations: Int
    /// The typed error that ended the last cycle, nil after a successful one.
    public let lastError: SyncCycleError?
    /// What the last successful cycle did.
    public let lastSummary: SyncSummary?
    /// The stored blocking error, if any.
    public let blockingError: ClientInspection.BlockingError?
    /// The durable retry record's next eligible time (Unix ms), if one is stored.
    public let nextRetryAtMilliseconds: Int64?
}

/// The public native SDK surface (client contract, "Public native SDK surface") over one local database: local
/// SQL with capture, the client-owned sync lifecycle on a background scheduler, typed status and events, and
/// inspection of retained and rejected mutation records.
///
/// One ``SynchroDatabase`` owns its file at a time (``DatabaseLock``): a second open of the same file, in this
/// process or another, fails with ``SynchroDatabaseError/databaseInUse(path:)``. Sync lifecycle calls from inside
/// an application transaction callback are refused before any lifecycle lock is taken.
public final class SynchroDatabase: Sendable {
    /// The configuration it was opened with.
    public let configuration: SynchroDatabaseConfiguration
    let store: ClientStore
    private let lock: Mutex<DatabaseLock?>
    private let status = SyncStatus()
    private let lifecycle = Mutex(Lifecycle())
    private let statusObservers = SyncObservers<SyncStatusSnapshot>()
    private let eventObservers = SyncObservers<SyncEvent>()
    private let stateObservation: Mutex<SyncObservation?> = Mutex(nil)

    /// The mutable lifecycle, guarded by `lifecycle`.
    private struct Lifecycle {
        /// Non-nil while sync is started; a new signal per start, so a stale cycle cannot reschedule itself.
        var signal: SyncStopSignal?
        var scheduled: SyncScheduledTask?
        var running = false
        var rerun = false
        var resetRequested = false
        var lastError: SyncCycleError?
        var lastSummary: SyncSummary?
        var closed = false
    }

    /// Opens (creating when missing) the database: takes the owner lock, migrates the file to the current
    /// layout and validates it. Sync is not started.
    public init(configuration: SynchroDatabaseConfiguration) throws(SynchroDatabaseError) {
        guard ExactObjectReader.pageLimit.contains(configuration.pageLimit) else {
            throw .invalidPageLimit(limit: configuration.pageLimit, allowed: ExactObjectReader.pageLimit)
        }
        let lock = try DatabaseLock(databasePath: configuration.path)
        do {
            store = try ClientStore(configuration: ClientStoreConfiguration(
                path: configuration.path, clientID: configuration.clientID, uuids: configuration.uuids,
                clock: configuration.clock))
        } catch {
            throw .store(error)
        }
        self.configuration = configuration
        self.lock = Mutex(lock)
        let observation = status.observe { [weak self] state in
            self?.eventObservers.notify(.stateChanged(state))
            self?.publishStatus()
        }
        stateObservation.withLock { $0 = observation }
        // The store opened and validated: `uninitialized → local_ready`, or `error` while a blocking error is
        // stored (`spec/client-store.md` §11 "Construction").
        let blocked = (try? blockingError()) != nil
        try? status.transition(to: blocked ? .error : .localReady)
    }

    /// Opens the database (``init(configuration:)``).
    public static func open(
        _ configuration: SynchroDatabaseConfiguration
    ) throws(SynchroDatabaseError) -> SynchroDatabase {
        try SynchroDatabase(configuration: configuration)
    }

    deinit {
        close()
    }

    /// Stops sync, closes the store and releases the owner lock. Later calls fail with `closed`.
    public func close() {
        let (signal, task) = lifecycle.withLock { lifecycle in
            defer {
                lifecycle.signal = nil
                lifecycle.scheduled = nil
                lifecycle.closed = true
            }
            return (lifecycle.signal, lifecycle.scheduled)
        }
        signal?.stop()
        task?.cancel()
        stateObservation.withLock { $0?.cancel() }
        // The engine lock orders this after any transaction a finishing cycle is in; later steps fail `closed`.
        store.close()
        lock.withLock { $0 = nil }
    }

    // MARK: - Local SQL

    /// Runs one read-only statement (``ClientStore/query(_:_:)``).
    public func query(_ sql: String, _ parameters: [SQLiteValue] = []) throws(ApplicationSQLError) -> [Row] {
        try store.query(sql, parameters)
    }

    /// Runs one write in its own transaction, capturing writes to synced tables (``ClientStore/execute(_:_:)``).
    @discardableResult
    public func execute(_ sql: String, _ parameters: [SQLiteValue] = []) throws(ApplicationSQLError) -> Int {
        try store.execute(sql, parameters)
    }

    /// Runs `body` in one local write transaction (``ClientStore/transaction(_:)``).
    @discardableResult
    public func transaction<Value: Sendable>(_ body: (ApplicationTransaction) throws -> Value) throws -> Value {
        try store.transaction(body)
    }

    /// Runs `body` as one atomic write group the server applies all together or not at all
    /// (``ClientStore/atomicWriteTransaction(_:)``).
    @discardableResult
    public func atomicWriteTransaction<Value: Sendable>(
        _ body: (ApplicationTransaction) throws -> Value
    ) throws -> Value {
        try store.atomicWriteTransaction(body)
    }

    // MARK: - Sync lifecycle

    /// Arms the client-owned sync lifecycle: a cycle now, then one every ``SynchroDatabaseConfiguration/syncInterval``,
    /// retries at their durable deadlines, until ``stopSync()``. Refused while a blocking error is stored (its
    /// recovery action comes first). Starting again after an error is the explicit `error → local_ready`.
    public func startSync() throws(SynchroDatabaseError) {
        try requireOutsideApplicationTransaction()
        if let blocking = try blockingError() {
            throw .syncBlocked(
                operation: blocking.operation, code: blocking.code, recoveryAction: blocking.recoveryAction)
        }
        try arm(reset: false)
    }

    /// Stops network work: the running cycle stops at its next step boundary and nothing more is scheduled.
    /// Durable state (queue, batches, cursors, checksums, rebuild attempts, retry record) is untouched, and
    /// local writes keep being captured.
    public func stopSync() throws(SynchroDatabaseError) {
        try requireOutsideApplicationTransaction()
        let (signal, task, running) = lifecycle.withLock { lifecycle in
            defer {
                lifecycle.signal = nil
                lifecycle.scheduled = nil
                lifecycle.rerun = false
            }
            return (lifecycle.signal, lifecycle.scheduled, lifecycle.running)
        }
        signal?.stop()
        task?.cancel()
        // A running cycle moves itself to `stopped` at its next step; an idle client moves now.
        if !running, status.state != .stopped { try? status.transition(to: .stopped) }
    }

    /// Requests an immediate cycle through the scheduler (after the running one, if any).
    public func syncNow() throws(SynchroDatabaseError) {
        try requireOutsideApplicationTransaction()
        let signal = try lifecycle.withLock {
            (lifecycle: inout Lifecycle) throws(SynchroDatabaseError) -> SyncStopSignal? in
            guard !lifecycle.closed else { throw .closed }
            guard let signal = lifecycle.signal else { throw .syncNotStarted }
            if lifecycle.running {
                lifecycle.rerun = true
                return nil
            }
            lifecycle.scheduled?.cancel()
            return signal
        }
        if let signal { schedule(after: .zero, signal: signal) }
    }

    /// The explicit recovery of an `unsupported` schema by an upgraded application (`spec/wire-protocol.md`
    /// §3.7, §10.3): arms sync whose next cycle connects with `schema_reset` (``SyncCycle/runSchemaReset()``).
    public func resetSchema() throws(SynchroDatabaseError) {
        try requireOutsideApplicationTransaction()
        guard try blockingError()?.recoveryAction == "schema_reset" else { throw .schemaResetNotPending }
        try stopSync()
        try arm(reset: true)
    }

    /// The explicit `retry` recovery (`spec/wire-protocol.md` §10.2): clears a stored blocking error whose
    /// recovery action is `retry` (``SyncCycle/acknowledgeBlockingError()``) and arms sync. A stored error that
    /// needs another action is refused with ``SynchroDatabaseError/syncBlocked(operation:code:recoveryAction:)``
    /// and stays; with no error stored this only arms sync.
    public func retryAfterError() throws(SynchroDatabaseError) {
        try requireOutsideApplicationTransaction()
        do {
            _ = try SyncCycle(context: makeContext(), delay: { _ in }).acknowledgeBlockingError()
        } catch .blocked(let operation, let code, let recoveryAction) {
            throw .syncBlocked(operation: operation, code: code, recoveryAction: recoveryAction)
        } catch .sync(_, .store(let error)) {
            throw error == .closed ? .closed : .store(error)
        } catch {
            throw .store(.sqlite(SQLiteError(reason: .sqlite, code: .error, message: error.description)))
        }
        try stopSync()
        try arm(reset: false)
    }

    /// The current state and bounded diagnostics.
    public func getSyncStatus() -> SyncStatusSnapshot {
        let machine = status.snapshot
        let (signal, lastError, lastSummary) = lifecycle.withLock { ($0.signal, $0.lastError, $0.lastSummary) }
        let inspection = try? store.inspect()
        let backoff = try? store.backoff()
        return SyncStatusSnapshot(
            state: machine.state, interruptedState: machine.interrupted, isStarted: signal != nil,
            pendingMutations: inspection?.pendingMutationCount ?? 0, lastError: lastError, lastSummary: lastSummary,
            blockingError: inspection?.blockingError, nextRetryAtMilliseconds: backoff?.nextRetryAtMilliseconds)
    }

    /// Calls `observer` with a new snapshot at every state change and at the end of every cycle, on the thread
    /// that made the change, until the observation is cancelled.
    public func observeSyncStatus(_ observer: @escaping @Sendable (SyncStatusSnapshot) -> Void) -> SyncObservation {
        statusObservers.add(observer)
    }

    /// Calls `observer` with every sync event — state changes, phases, pages, backoff, schema application,
    /// mutation outcomes by ID, rebuilds and typed errors — until the observation is cancelled.
    public func observeSyncEvents(_ observer: @escaping @Sendable (SyncEvent) -> Void) -> SyncObservation {
        eventObservers.add(observer)
    }

    // MARK: - Inspection

    /// Every durable queue record in local order, local terminal states included (`exceeds_push_limit`,
    /// `superseded_before_send`, …). A legacy record has no ``PendingMutation/binding`` and no authored values.
    public func inspectRetainedMutationRecords() throws(SynchroDatabaseError) -> [PendingMutation] {
        do {
            return try store.ledger()
        } catch {
            throw .store(error)
        }
    }

    /// Every retained rejection (conflicts and terminal rejections) with its authored mutation and rejection JSON.
    public func inspectRejectedMutationRecords() throws(SynchroDatabaseError) -> [RejectedMutationRecord] {
        try engineRead { connection in try RejectedMutationStore.all(on: connection) }
    }

    /// The explicit policy that clears retained rejections: the named ones, or all when `mutationIDs` is nil.
    /// Returns how many were cleared. The ledger keeps its entries (it is append-only).
    @discardableResult
    public func clearRejectedMutationRecords(_ mutationIDs: [String]? = nil) throws(SynchroDatabaseError) -> Int {
        do {
            return try store.clearRejectedMutationRecords(mutationIDs)
        } catch {
            throw error == .closed ? .closed : .store(error)
        }
    }

    // MARK: - Helpers

    private func requireOutsideApplicationTransaction() throws(SynchroDatabaseError) {
        guard !ApplicationScope.isActive(store) else { throw .calledInsideApplicationTransaction }
    }

    /// The stored blocking error, read as the engine reads it when it refuses a cycle.
    private func blockingError() throws(SynchroDatabaseError) -> ClientInspection.BlockingError? {
        do {
            return try BlockingErrorStore.stored(in: store)
        } catch .store(let error) {
            throw error == .closed ? .closed : .store(error)
        } catch {
            throw .store(.sqlite(SQLiteError(reason: .sqlite, code: .error, message: error.rule)))
        }
    }

    private func engineRead<Value: Sendable>(
        _ body: @escaping (Connection) throws -> Value
    ) throws(SynchroDatabaseError) -> Value {
        do {
            return try store.readSyncState(body)
        } catch .store(let error) {
            throw error == .closed ? .closed : .store(error)
        } catch {
            if case .invalidState = error { throw .closed }
            throw .store(.sqlite(SQLiteError(reason: .sqlite, code: .error, message: error.rule)))
        }
    }

    /// Starts a new lifecycle (idempotent while started) and schedules a cycle now.
    private func arm(reset: Bool) throws(SynchroDatabaseError) {
        let signal = try lifecycle.withLock {
            (lifecycle: inout Lifecycle) throws(SynchroDatabaseError) -> SyncStopSignal? in
            guard !lifecycle.closed else { throw .closed }
            lifecycle.resetRequested = lifecycle.resetRequested || reset
            guard lifecycle.signal == nil else { return nil }
            let signal = SyncStopSignal()
            lifecycle.signal = signal
            return signal
        }
        if let signal { schedule(after: .zero, signal: signal) }
    }

    private func schedule(after delay: Duration, signal: SyncStopSignal) {
        let task = configuration.scheduler.schedule(after: delay) { [weak self] in self?.runCycle(signal: signal) }
        lifecycle.withLock { lifecycle in
            if lifecycle.signal === signal { lifecycle.scheduled = task } else { task.cancel() }
        }
    }

    /// One cycle of the lifecycle armed with `signal`, then the next one scheduled.
    private func runCycle(signal: SyncStopSignal) {
        let reset = lifecycle.withLock { lifecycle -> Bool? in
            guard lifecycle.signal === signal, !lifecycle.running else {
                if lifecycle.signal === signal { lifecycle.rerun = true }
                return nil
            }
            lifecycle.running = true
            lifecycle.scheduled = nil
            defer { lifecycle.resetRequested = false }
            return lifecycle.resetRequested
        }
        guard let reset else { return }
        let cycle = makeCycle(signal: signal)
        var failure: SyncCycleError?
        var summary: SyncSummary?
        do {
            summary = reset ? try cycle.runSchemaReset() : try cycle.run()
        } catch {
            failure = error
        }
        let rerun = lifecycle.withLock { lifecycle -> Bool in
            lifecycle.running = false
            lifecycle.lastError = failure
            if let summary { lifecycle.lastSummary = summary }
            defer { lifecycle.rerun = false }
            return lifecycle.rerun
        }
        if let failure { eventObservers.notify(.failed(failure)) }
        publishStatus()
        guard !signal.isStopped, let next = nextDelay(after: failure, rerun: rerun) else { return }
        schedule(after: next, signal: signal)
    }

    /// When the next cycle runs: now after a `syncNow()` during the cycle, at the durable retry deadline after
    /// retries ran out, after the interval after success; never after a non-retryable error (a timer cannot
    /// leave `error`, `spec/wire-protocol.md` §10.2) or a stop.
    private func nextDelay(after failure: SyncCycleError?, rerun: Bool) -> Duration? {
        if rerun { return .zero }
        guard let failure else { return configuration.syncInterval }
        guard case .retriesExhausted = failure else { return nil }
        let deadline = (try? store.backoff())?.nextRetryAtMilliseconds ?? 0
        return .milliseconds(max(0, deadline - configuration.clock.nowMilliseconds()))
    }

    private func makeContext() -> SyncContext {
        SyncContext(
            store: store, transport: configuration.transport, platform: configuration.platform,
            appVersion: configuration.appVersion, pageLimit: configuration.pageLimit)
    }

    private func makeCycle(signal: SyncStopSignal) -> SyncCycle {
        let scheduler = configuration.scheduler
        let events = eventObservers
        let context = makeContext()
        return SyncCycle(
            context: context, configuration: configuration.cycle,
            delay: { duration in scheduler.wait(for: duration, signal: signal) },
            events: { event in events.notify(event) }, random: configuration.random,
            isCancelled: { signal.isStopped }, status: status)
    }

    private func publishStatus() {
        statusObservers.notify(getSyncStatus())
    }
}
