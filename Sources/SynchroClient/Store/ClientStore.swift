import SQLiteKit
import SynchroStore
import Synchronization
import SynchroProtocol

/// The local store of the headless client: one SQLite working database in the upstream Swift client's layout
/// (`spec/client-store.md`), opened through two connections on the same file as upstream does —
///
/// - the **engine** connection (WAL, foreign keys, 5 s busy timeout) that migrates the file, applies schemas,
///   and runs server-apply transactions with capture suppressed;
/// - the **application** connection, restricted by the application SQL policy, on which `query`, `execute`,
///   `transaction` and `atomicWriteTransaction` run and where capture triggers record local intent.
///
/// Each connection is used under its own lock. An application transaction callback must return before the
/// store's other methods are called: they are refused from inside it instead of waiting on its write lock.
///
/// A store has one owner (``StoreOwnerLock``): opening takes an exclusive lock on `<path>.lock` before the file
/// is touched and `close()` releases it, so a second open — in another process or this one — fails at once with
/// ``ClientStoreError/storeInUse(path:holderPID:)``.
public final class ClientStore: Sendable {
    /// The configuration the store was opened with.
    public let configuration: ClientStoreConfiguration
    /// The layout the file had before this open migrated it.
    public let openedLayout: StoreLayout

    private let engine: Mutex<Connection?>
    private let application: Mutex<ApplicationConnection?>
    /// Scope digests kept between tracked server applies; every other engine write forgets them.
    let scopeDigests = ScopeDigestMemo()
    /// The last active manifest parsed, with the exact stored text it was parsed from.
    private let parsedManifest = Mutex<(text: String, manifest: ClientManifest)?>(nil)
    /// Checkpoints beside a bulk apply (``beginBulkApply()``).
    let checkpointer: WALCheckpointer
    /// The owner lock, held from open to close.
    private let owner: Mutex<StoreOwnerLock?>

    /// Opens (creating when missing) the working database, runs the remaining migration steps — which turns a
    /// seed in the interchange baseline layout into the current layout — and verifies the result.
    public init(configuration: ClientStoreConfiguration) throws(ClientStoreError) {
        guard configuration.clientID.isCleanClientID else {
            throw .invalidConfiguration(reason: "the client ID is empty or not I-JSON clean")
        }
        // Taken before the file is opened: a refused opener must not migrate or checkpoint the owner's file.
        let ownerLock = try StoreOwnerLock(storePath: configuration.path)
        self.configuration = configuration
        checkpointer = WALCheckpointer(path: configuration.path)
        let opened = try StoreFile.open(path: configuration.path, clock: configuration.clock)
        let engineConnection = opened.connection
        let layout = opened.layout
        let tables = opened.localSchema
        do {
            // Indexes a rebuild left deferred when the process died are built before anything else uses the store.
            try mappingStoreErrors {
                if try DeferredIndexes.record(on: engineConnection) != nil {
                    _ = try engineConnection.transaction(kind: .immediate) {
                        try RebuildIndexDeferral.restore(on: engineConnection)
                    }
                }
            }
        } catch {
            engineConnection.close()
            throw error
        }
        let applicationConnection: ApplicationConnection
        do {
            applicationConnection = try mappingStoreErrors {
                try ApplicationConnection(
                    path: configuration.path, clientID: configuration.clientID, uuids: configuration.uuids,
                    clock: configuration.clock)
            }
        } catch {
            engineConnection.close()
            throw error
        }
        applicationConnection.updateSyncedTables(tables)
        openedLayout = layout
        engine = Mutex(engineConnection)
        application = Mutex(applicationConnection)
        owner = Mutex(ownerLock)
    }

    deinit {
        close()
    }

    /// Closes both connections; the engine checkpoints the WAL (TRUNCATE) first, as upstream does on close.
    /// Later calls fail with `closed`. Called from inside an application transaction callback it does nothing:
    /// that transaction still owns the application connection.
    public func close() {
        guard !ApplicationScope.isActive(self) else { return }
        checkpointer.close()
        application.withLock { connection in
            connection?.close()
            connection = nil
        }
        engine.withLock { connection in
            _ = try? connection?.checkpoint(.truncate)
            connection?.close()
            connection = nil
        }
        // Released last: the next owner opens a file no connection of this one still writes.
        owner.withLock { $0 = nil }
    }

    // MARK: - Engine

    /// Page cache of the engine connection during a bulk apply, KiB: a 1000-row rebuild page changes the rows, the
    /// synced table's indexes, two row-version and three edge b-trees and a page receipt of about 700 KB; with
    /// SQLite's default 2 MB the index pages a page touches at random are evicted and read back page after page.
    /// SQLite allocates the cache only as pages are used, and gives it back when the bulk apply ends.
    static let bulkCacheKiB: Int64 = 32_768

    /// Starts a bulk apply — a sequence of page transactions (a rebuild) — with a larger page cache
    /// (``bulkCacheKiB``) and without checkpoints in the engine's commits: once a commit leaves as many frames in
    /// the log as the automatic checkpoint would have waited for (`PRAGMA wal_autocheckpoint`, 1000 by default),
    /// a checkpoint runs beside the engine on another connection and thread instead (``WALCheckpointer``).
    /// ``endBulkApply(_:)`` restores both settings.
    func beginBulkApply() throws -> BulkApply {
        let checkpointer = checkpointer
        return try engine.withLock { (connection: inout Connection?) throws -> BulkApply in
            guard let connection else { throw ClientStoreError.closed }
            let pages = try connection.scalar("PRAGMA wal_autocheckpoint")?.integerValue ?? 1000
            let cache = try connection.scalar("PRAGMA cache_size")?.integerValue ?? -2000
            let threshold = Int(max(1, pages))
            try connection.setWALHook { frames in checkpointer.committed(frames: frames, threshold: threshold) }
            try connection.execute("PRAGMA cache_size = -\(Self.bulkCacheKiB)")
            return BulkApply(autoCheckpointPages: pages, cacheSize: cache)
        }
    }

    /// Between two page transactions of a bulk apply: keeps the log within 8 times the checkpoint threshold by
    /// waiting for the checkpoint beside the engine when it is longer (``WALCheckpointer/bound(atFrames:)``).
    func boundLog(_ bulk: BulkApply) {
        checkpointer.bound(atFrames: 8 * Int(max(1, bulk.autoCheckpointPages)))
    }

    /// Ends a bulk apply: the engine checkpoints automatically again, with its previous page cache.
    func endBulkApply(_ bulk: BulkApply) {
        engine.withLock { connection in
            try? connection?.setWALHook(nil)
            _ = try? connection?.execute("PRAGMA wal_autocheckpoint = \(bulk.autoCheckpointPages)")
            _ = try? connection?.execute("PRAGMA cache_size = \(bulk.cacheSize)")
        }
    }

    /// What ``endBulkApply(_:)`` restores.
    struct BulkApply: Sendable {
        let autoCheckpointPages: Int64
        let cacheSize: Int64
    }


    /// Runs `body` on the engine connection (no transaction), refusing calls from inside an application
    /// transaction callback. A body that changed any row (even one rolled back) forgets the remembered scope
    /// digests; DDL changes the stamp they are kept under.
    func withEngine<Value: Sendable>(
        _ body: (Connection) throws(ClientStoreError) -> Value
    ) throws(ClientStoreError) -> Value {
        guard !ApplicationScope.isActive(self) else { throw .calledInsideApplicationTransaction }
        return try engine.withLock { (connection: inout Connection?) throws(ClientStoreError) -> Value in
            guard let connection else { throw .closed }
            let changes = connection.totalChanges
            defer { if connection.totalChanges != changes { scopeDigests.clear() } }
            return try body(connection)
        }
    }

    /// Applies a verified manifest to a store that has no active schema: synced tables with the declared types,
    /// manifest indexes, capture triggers, schema metadata and the archive row, in one schema-migration
    /// transaction (`spec/client-store.md` §5, §10). Applying the active manifest again verifies and reinstalls.
    /// Local-only tables are never touched.
    @discardableResult
    public func applySchema(_ manifest: ClientManifest) throws(ClientStoreError) -> SchemaApplicationOutcome {
        let outcome = try withEngine { (connection) throws(ClientStoreError) -> SchemaApplicationOutcome in
            try SchemaApplier(manifest: manifest, clock: configuration.clock).apply(on: connection)
        }
        try withApplication { (connection) throws(ClientStoreError) in
            connection.updateSyncedTables(manifest.localSchema)
        }
        return outcome
    }

    /// The synced tables of the active schema (empty for a fresh store).
    public func localSchema() throws(ClientStoreError) -> [LocalSchemaTable] {
        try withEngine { (connection) throws(ClientStoreError) -> [LocalSchemaTable] in
            try StoreFile.storedLocalSchema(on: connection)
        }
    }

    /// The value of a `_synchro_meta` key.
    public func meta(_ key: MetaKey) throws(ClientStoreError) -> String? {
        try withEngine { (connection) throws(ClientStoreError) -> String? in
            try mappingStoreErrors { try MetaStore.value(key, on: connection) }
        }
    }

    /// Runs `body` in one server-apply transaction: `sync_lock = '1'` from start to just before commit, so rows
    /// written for pull, rebuild, push reconciliation, scope cleanup or seed installation create no mutation
    /// (no echo). A failure rolls everything back, including the flag. Engine-only (`package`): the public API
    /// never reaches an uncaptured write.
    @discardableResult
    package func serverApply<Value: Sendable>(
        _ body: (EngineTransaction) throws -> Value
    ) throws -> Value {
        guard !ApplicationScope.isActive(self) else { throw ClientStoreError.calledInsideApplicationTransaction }
        return try engine.withLock { (connection: inout Connection?) throws -> Value in
            guard let connection else { throw ClientStoreError.closed }
            // Whatever the callback writes is unknown to the scope digest memo.
            defer { scopeDigests.clear() }
            do {
                return try EngineTransactions.serverApply(on: connection) { connection in
                    let transaction = EngineTransaction(connection: connection)
                    defer { transaction.end() }
                    return try body(transaction)
                }
            } catch let error as SQLiteError {
                // The callback reports through EngineTransaction (ClientStoreError); a bare SQLite error comes
                // from the transaction itself (BEGIN, the capture switch, COMMIT).
                throw ClientStoreError.sqlite(error)
            }
        }
    }

    /// Runs `body` in one server-apply transaction that keeps the remembered scope digests
    /// (``ScopeDigestMemo``): for engine steps whose only writes to synced rows, row versions and provenance go
    /// through ``LocalRows`` (which forgets the digests on each), and that write nothing else a scope digest
    /// reads — the ledger, rejected mutations or the schema. Digests it computes are kept once it commits; a
    /// failure forgets every digest.
    func trackedServerApply<Value: Sendable>(_ body: (Connection) throws -> Value) throws -> Value {
        guard !ApplicationScope.isActive(self) else { throw ClientStoreError.calledInsideApplicationTransaction }
        return try engine.withLock { (connection: inout Connection?) throws -> Value in
            guard let connection else { throw ClientStoreError.closed }
            let session = scopeDigests.session(on: connection)
            do {
                let value = try EngineTransactions.serverApply(on: connection) { connection in
                    try ScopeDigestMemo.Session.$current.withValue(session) { try body(connection) }
                }
                scopeDigests.commit(session)
                return value
            } catch let error as SQLiteError {
                scopeDigests.clear()
                throw ClientStoreError.sqlite(error)
            } catch {
                scopeDigests.clear()
                throw error
            }
        }
    }

    /// The active manifest (``LocalRows/activeManifest(on:)``) read on `connection`, parsed again only when its
    /// stored text differs from the one parsed last: every pull and rebuild page needs it, and parsing and
    /// hash-verifying the same bytes again gives the same value.
    func activeManifest(on connection: Connection) throws -> ClientManifest {
        guard let text = try MetaStore.value(.schemaManifest, on: connection), !text.isEmpty else {
            throw SyncError.invalidState(reason: "the store has no active schema")
        }
        if let parsed = parsedManifest.withLock({ $0 }), parsed.text == text { return parsed.manifest }
        let manifest = try ClientManifest(bytes: Array(text.utf8))
        parsedManifest.withLock { $0 = (text, manifest) }
        return manifest
    }

    /// Forces capture back on (`sync_lock = '0'`), as every sync start does against a crash leftover.
    public func resetCaptureSuppression() throws(ClientStoreError) {
        try withEngine { (connection) throws(ClientStoreError) in
            try mappingStoreErrors { try MetaStore.set(.syncLock, "0", on: connection) }
        }
    }

    /// Every ledger entry with its authored values, in local order, read from one snapshot.
    public func ledger() throws(ClientStoreError) -> [PendingMutation] {
        try withEngine { (connection) throws(ClientStoreError) -> [PendingMutation] in
            try mappingStoreErrors {
                try connection.transaction(kind: .deferred) { try MutationLedger.entries(on: connection) }
            }
        }
    }

    /// Unresolved ledger entries (not accepted, rejected, over a push limit, superseded or cancelled) in
    /// capture order, read from one snapshot: the pending count and the candidates the sealing step reads.
    public func unresolvedMutations() throws(ClientStoreError) -> [PendingMutation] {
        try withEngine { (connection) throws(ClientStoreError) -> [PendingMutation] in
            try mappingStoreErrors {
                try connection.transaction(kind: .deferred) {
                    try MutationLedger.entriesInCaptureOrder(
                        where: "candidate.lifecycle_state NOT IN \(MutationLifecycleState.resolvedSQLList)",
                        on: connection)
                }
            }
        }
    }

    /// Runs pre-wire same-row normalization over every unsealed chain in one transaction
    /// (`spec/client-store.md` §8): merged successors, superseded and cancelled sources, blocked successors.
    public func normalizePendingMutations() throws(ClientStoreError) {
        try withEngine { (connection) throws(ClientStoreError) in
            try mappingStoreErrors {
                try connection.transaction(kind: .immediate) {
                    try ChainNormalizer(connection: connection, uuids: configuration.uuids, clock: configuration.clock)
                        .normalizeAll()
                }
            }
        }
    }

    // MARK: - Application

    func withApplication<Value: Sendable>(
        _ body: (ApplicationConnection) throws(ClientStoreError) -> Value
    ) throws(ClientStoreError) -> Value {
        try application.withLock { (connection: inout ApplicationConnection?) throws(ClientStoreError) -> Value in
            guard let connection else { throw .closed }
            return try body(connection)
        }
    }

    /// Runs one read-only statement and returns its rows. The statement is classified before it runs: writes
    /// (also with `RETURNING`), transaction control and several statements are refused.
    public func query(_ sql: String, _ arguments: [SQLiteValue] = []) throws(ApplicationSQLError) -> [Row] {
        guard !ApplicationScope.isActive(self) else { throw .nestedTransaction }
        return try application.withLock {
            (connection: inout ApplicationConnection?) throws(ApplicationSQLError) -> [Row] in
            guard let connection else { throw .closed }
            return try connection.query(sql, arguments)
        }
    }

    /// Runs one write in its own managed transaction and returns the rows it changed directly (a soft delete,
    /// which keeps its row, reports 0). Writes to synced tables are captured in the same transaction.
    @discardableResult
    public func execute(_ sql: String, _ arguments: [SQLiteValue] = []) throws(ApplicationSQLError) -> Int {
        do {
            return try transaction { transaction throws(ApplicationSQLError) -> Int in
                try transaction.execute(sql, arguments)
            }
        } catch let error as ApplicationSQLError {
            throw error
        } catch {
            // The callback throws only ApplicationSQLError and managedWrite maps everything else to it.
            throw .store(.sqlite(SQLiteError(reason: .sqlite, code: .error, message: String(describing: error))))
        }
    }

    /// Runs `body` in one local write transaction: all its statements and their capture commit together, or
    /// nothing does. A local transaction is not a server-atomic group (use ``atomicWriteTransaction(_:)``).
    @discardableResult
    public func transaction<Value: Sendable>(_ body: (ApplicationTransaction) throws -> Value) throws -> Value {
        try managedWrite(mask: nil, atomic: false, body)
    }

    /// Runs `body` as one atomic write group: every synced mutation it captures carries one group ID, the server
    /// applies all or none, and the group is validated before the local commit (`spec/integrity.md` §5.3). A
    /// failed rule throws ``AtomicGroupInvalid`` and rolls everything back.
    @discardableResult
    public func atomicWriteTransaction<Value: Sendable>(
        _ body: (ApplicationTransaction) throws -> Value
    ) throws -> Value {
        try managedWrite(mask: nil, atomic: true, body)
    }

    /// Runs `body` with one authored column mask for the whole callback (`spec/client-store.md` §7): an UPDATE
    /// captures only the changed columns the mask names for its table, and UPDATEs of other synced tables
    /// capture nothing. Names are matched to the schema's spelling case-insensitively.
    @discardableResult
    public func authoredWriteTransaction<Value: Sendable>(
        table: String, operation: PushOperation, columns: [String], _ body: (ApplicationTransaction) throws -> Value
    ) throws -> Value {
        guard !table.isEmpty else { throw ApplicationSQLError.invalidAuthoredMask(reason: "the table name is empty") }
        guard columns.allSatisfy({ !$0.isEmpty }) else {
            throw ApplicationSQLError.invalidAuthoredMask(reason: "a column name is empty")
        }
        guard Set(columns.map(SQLName.normalized)).count == columns.count else {
            throw ApplicationSQLError.invalidAuthoredMask(reason: "column names repeat")
        }
        let mask = try withApplication { (connection) throws(ClientStoreError) -> CaptureContext in
            let schema = connection.syncedTable(named: table)
            return CaptureContext(
                tableName: schema?.tableName ?? table, operation: operation,
                columnNames: columns.map { schema?.column(named: $0)?.name ?? $0 })
        }
        return try managedWrite(mask: mask, atomic: false, body)
    }

    private func managedWrite<Value: Sendable>(
        mask: CaptureContext?, atomic: Bool, _ body: (ApplicationTransaction) throws -> Value
    ) throws -> Value {
        guard !ApplicationScope.isActive(self) else { throw ApplicationSQLError.nestedTransaction }
        return try application.withLock { (connection: inout ApplicationConnection?) throws -> Value in
            guard let connection else { throw ApplicationSQLError.closed }
            do {
                let result = try ApplicationScope.within(self) {
                    try connection.managedWrite(mask: mask, atomic: atomic, body)
                }
                SyncCrashPoint.captureCommitted.reached()
                return result
            } catch let error as SQLiteError {
                // BEGIN, COMMIT and the SDK's own statements; the callback's statements report typed errors.
                throw ApplicationSQLError.sqlite(error)
            } catch let error as ClientStoreError {
                throw ApplicationSQLError.store(error)
            }
        }
    }

}

/// Which stores have an application transaction callback running on the current task or thread, so a
/// re-entrant call is refused instead of deadlocking on the store's own lock.
enum ApplicationScope {
    @TaskLocal static var activeStores: Set<ObjectIdentifier> = []

    static func isActive(_ store: ClientStore) -> Bool {
        activeStores.contains(ObjectIdentifier(store))
    }

    static func within<Value>(_ store: ClientStore, _ body: () throws -> Value) rethrows -> Value {
        try $activeStores.withValue(activeStores.union([ObjectIdentifier(store)]), operation: body)
    }
}

extension String {
    /// A non-empty client ID that RFC 8785 can encode (the push envelope's rule).
    var isCleanClientID: Bool {
        !isEmpty && (try? CanonicalJSON.encode(.string(self))) != nil
    }
}
