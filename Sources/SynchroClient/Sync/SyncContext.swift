import SQLiteKit
import SynchroStore
import SynchroProtocol

/// What every exchange needs besides the store: the transport and the client's fixed request members.
public struct SyncContext: Sendable {
    /// The store being synchronized.
    public let store: ClientStore
    /// Where requests go.
    public let transport: any SyncTransport
    /// `platform` of connect.
    public let platform: String
    /// `app_version` of connect (SemVer).
    public let appVersion: String
    /// `limit` of pull and of new rebuild attempts (1…1000).
    public let pageLimit: Int64

    /// Creates a context.
    public init(
        store: ClientStore, transport: any SyncTransport, platform: String = "ios", appVersion: String = "1.0.0",
        pageLimit: Int64 = 100
    ) {
        self.store = store
        self.transport = transport
        self.platform = platform
        self.appVersion = appVersion
        self.pageLimit = pageLimit
    }

    /// The bound client ID (``ClientIdentity``): push, pull and rebuild present it, never the configured one.
    func boundClientID() throws(SyncError) -> String {
        try store.readSyncState { connection in try ClientIdentity.bound(on: connection) }
    }
}

/// The local scope state as the engine reads it.
struct LocalScope {
    let scopeID: String
    let cursor: String?
    let generation: Int64
}

extension ClientStore {
    /// Runs `body` on the engine connection inside one deferred (read) transaction.
    func readSyncState<Value: Sendable>(_ body: (Connection) throws -> Value) throws(SyncError) -> Value {
        try SyncExchange.mapping {
            try withEngine { (connection) throws(ClientStoreError) -> Value in
                try mappingStoreErrors { try connection.transaction(kind: .deferred) { try body(connection) } }
            }
        }
    }

    /// Runs `body` in one server-apply transaction (capture suppressed), mapping failures to ``SyncError``.
    func applySync<Value: Sendable>(_ body: (Connection) throws -> Value) throws(SyncError) -> Value {
        try SyncExchange.mapping { try serverApply { transaction in try body(transaction.connection) } }
    }

    /// ``applySync(_:)`` that keeps the remembered scope digests (``trackedServerApply(_:)``): only for a body
    /// that writes synced rows, row versions and provenance through ``LocalRows`` alone and never the ledger,
    /// rejected mutations or the schema (pull pages, rebuild starts and pages, connect without schema action).
    func applySyncKeepingScopeDigests<Value: Sendable>(
        _ body: (Connection) throws -> Value
    ) throws(SyncError) -> Value {
        try SyncExchange.mapping { try trackedServerApply(body) }
    }
}

/// Reads and writes of `_synchro_scopes` and the bound client state (`spec/client-store.md` §4.1, §9).
enum ScopeStore {
    /// Every local scope in byte order of its ID.
    static func all(on connection: Connection) throws -> [LocalScope] {
        try connection.query("SELECT scope_id, cursor, generation FROM _synchro_scopes ORDER BY scope_id") {
            LocalScope(
                scopeID: try $0.text(at: 0), cursor: $0.isNull(at: 1) ? nil : try $0.text(at: 1),
                generation: $0.int64(at: 2))
        }
    }

    /// The bound generation and current schema reference, required by pull and rebuild.
    static func binding(on connection: Connection) throws -> (generation: Int64, schema: SchemaReference) {
        let generation = try MetaStore.integer(.clientGeneration, on: connection)
        let version = try MetaStore.integer(.schemaVersion, on: connection)
        let hash = try MetaStore.value(.schemaHash, on: connection) ?? ""
        guard generation > 0, version > 0, let schema = try? SchemaReference(version: version, hash: hash) else {
            throw SyncError.invalidState(reason: "the store is not connected")
        }
        return (generation, schema)
    }

    /// Bumps the scope generation: cursor, checksum and local checksum cleared (rebuild required).
    static func invalidate(_ scopeID: String, on connection: Connection) throws {
        try connection.run("""
            UPDATE _synchro_scopes SET cursor = NULL, checksum = NULL, local_checksum = '', generation = generation + 1
            WHERE scope_id = ?
            """, [.text(scopeID)])
    }

    /// Removes a scope and everything attached to it, deleting rows it leaves orphaned (no mutation created).
    static func remove(_ scopeID: String, rows: LocalRows?, on connection: Connection) throws {
        try connection.run("DELETE FROM _synchro_rebuild_page_receipts WHERE scope_id = ?", [.text(scopeID)])
        try connection.run("DELETE FROM _synchro_rebuild_attempts WHERE scope_id = ?", [.text(scopeID)])
        if let rows {
            try rows.dropEdges(scope: scopeID)
        } else {
            try connection.run("DELETE FROM _synchro_scope_rows WHERE scope_id = ?", [.text(scopeID)])
        }
        try connection.run("DELETE FROM _synchro_scopes WHERE scope_id = ?", [.text(scopeID)])
    }

    /// Adds (or re-adds) a scope with the given cursor; `nil` makes it rebuild-required.
    static func add(_ scopeID: String, cursor: String?, on connection: Connection) throws {
        try connection.run("""
            INSERT INTO _synchro_scopes (scope_id, cursor) VALUES (?, ?)
            ON CONFLICT (scope_id) DO UPDATE SET cursor = excluded.cursor
            """, [.text(scopeID), cursor.map(SQLiteValue.text) ?? .null])
    }
}
