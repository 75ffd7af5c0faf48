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
    /// Whether sync is started (armed), whatever the current state; true while paused.
    public let isStarted: Bool
    /// Whether the started lifecycle is paused (``SynchroDatabase/pause()``): local work continues, nothing is
    /// sent until ``SynchroDatabase/resume()``.
    public let isPaused: Bool
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
/// One ``SynchroDatabase`` owns its file at a time (the store's owner lock, seed 002): a second open of the same
/// file, in this process or another, fails at once with ``SynchroDatabaseError/storeInUse(path:holderPID:)``.
/// Sync lifecycle calls from inside an application transaction callback are refused before any lifecycle lock is
/// taken.
public final class SynchroDatabase: Sendable {
    /// The configuration it was opened with.
    public let configuration: SynchroDatabaseConfiguration
    let store: ClientStore
    let status = SyncStatus()
    let lifecycle = Mutex(Lifecycle())
    let statusObservers = SyncObservers<SyncStatusSnapshot>()
    let eventObservers = SyncObservers<SyncEvent>()
    let stateObservation: Mutex<SyncObservation?> = Mutex(nil)
    /// Callers awaiting one mutation's settlement (``settlement(of:)``).
    let settlementWaiters = SettlementWaiters()

    /// The mutable lifecycle, guarded by `lifecycle`.
    struct Lifecycle {
        /// Non-nil while cycles may run; a new signal per start or resume, so a stale cycle cannot reschedule
        /// itself.
        var signal: SyncStopSignal?
        /// Started but paused: no signal, no cycle, until `resume()`.
        var paused = false
        var scheduled: SyncScheduledTask?
        var running = false
        var rerun = false
        var resetRequested = false
        var lastError: SyncCycleError?
        var lastSummary: SyncSummary?
        var closed = false
    }

    /// Opens (creating when missing) the database: takes the owner lock, migrates the file to the current
    /// layout and validates it. Sync is not started. Another owner of the file fails the open at once with
    /// ``SynchroDatabaseError/storeInUse(path:holderPID:)``.
    public init(configuration: SynchroDatabaseConfiguration) throws(SynchroDatabaseError) {
        guard ExactObjectReader.pageLimit.contains(configuration.pageLimit) else {
            throw .invalidPageLimit(limit: configuration.pageLimit, allowed: ExactObjectReader.pageLimit)
        }
        do {
            store = try ClientStore(configuration: ClientStoreConfiguration(
                path: configuration.path, clientID: configuration.clientID, uuids: configuration.uuids,
                clock: configuration.clock))
        } catch .storeInUse(let path, let holder) {
            throw .storeInUse(path: path, holderPID: holder)
        } catch {
            throw .store(error)
        }
        self.configuration = configuration
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

    // MARK: - Local SQL

    /// Runs one read-only statement (``ClientStore/query(_:_:)``).
    public func query(_ sql: String, _ parameters: [SQLiteValue] = []) throws(ApplicationSQLError) -> [Row] {
        try store.query(sql, parameters)
    }

    /// Runs one read-only statement and returns its first row, or nil when it returns none (seed 001; extra
    /// rows are not an error, as upstream's `queryOne`). The same read-only policy as ``query(_:_:)`` applies.
    public func queryOne(_ sql: String, _ parameters: [SQLiteValue] = []) throws(ApplicationSQLError) -> Row? {
        try store.query(sql, parameters).first
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

    /// The current state and bounded diagnostics.
    public func getSyncStatus() -> SyncStatusSnapshot {
        let machine = status.snapshot
        let (signal, paused, lastError, lastSummary) = lifecycle.withLock {
            ($0.signal, $0.paused, $0.lastError, $0.lastSummary)
        }
        let inspection = try? store.inspect()
        let backoff = try? store.backoff()
        return SyncStatusSnapshot(
            state: machine.state, interruptedState: machine.interrupted, isStarted: signal != nil || paused, isPaused: paused,
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

    func requireOutsideApplicationTransaction() throws(SynchroDatabaseError) {
        guard !ApplicationScope.isActive(store) else { throw .calledInsideApplicationTransaction }
    }

    /// The stored blocking error, read as the engine reads it when it refuses a cycle.
    func blockingError() throws(SynchroDatabaseError) -> ClientInspection.BlockingError? {
        do {
            return try BlockingErrorStore.stored(in: store)
        } catch .store(let error) {
            throw error == .closed ? .closed : .store(error)
        } catch {
            throw .store(.sqlite(SQLiteError(reason: .sqlite, code: .error, message: error.rule)))
        }
    }

    func engineRead<Value: Sendable>(
        _ body: @escaping (Connection) throws -> Value
    ) throws(SynchroDatabaseError) -> Value {
        // A typed failure of the body itself (an inconsistent record) reaches the caller as it was thrown.
        let read: Result<Value, SynchroDatabaseError>
        do {
            read = try store.readSyncState { connection in
                do {
                    return .success(try body(connection))
                } catch let failure as SynchroDatabaseError {
                    return .failure(failure)
                }
            }
        } catch .store(let error) {
            throw error == .closed ? .closed : .store(error)
        } catch {
            if case .invalidState = error { throw .closed }
            throw .store(.sqlite(SQLiteError(reason: .sqlite, code: .error, message: error.rule)))
        }
        return try read.get()
    }
}
