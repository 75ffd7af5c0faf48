import SQLiteKit
import SynchroStore
import SynchroProtocol

/// Server-apply writes of synced rows, row versions and provenance on the engine connection, plus the local
/// scope digest (`spec/client-store.md` §9). Runs only inside a server-apply transaction.
struct LocalRows {
    let connection: Connection
    let manifest: SchemaManifest
    let tables: [String: LocalSchemaTable]

    /// Unresolved ledger states that protect a row from server data (`spec/client-store.md` §9).
    static let protectingStates = "('unsealed', 'sealed', 'blocked_by_predecessor', 'legacy_blocked')"

    /// The record IDs of one table (its name bound to both `?`) that are protected rows (`spec/client-store.md`
    /// §9): an unresolved ledger entry in a protecting state, or a retained `rejected_terminal` rejection without
    /// server row and server version. A terminal rejection describes no server state (client contract,
    /// "Conflict and terminal outcomes"), so the local row it left stays until policy clears the rejection
    /// (``SynchroDatabase/clearRejectedMutationRecords(_:)``); a conflict carries the server's state and
    /// protects nothing.
    static let protectedRecordIDsSQL = """
        SELECT record_id FROM _synchro_pending_changes
        WHERE table_name = ? AND lifecycle_state IN \(protectingStates)
        UNION
        SELECT record_id FROM _synchro_rejected_mutations
        WHERE table_name = ? AND status = 'rejected_terminal' AND server_row_json IS NULL AND server_version IS NULL
        """

    /// The upsert of each table's synced columns, by table ID: built once, not per written row.
    let upserts: [String: String]
    /// The scope digest memo of the tracked server-apply transaction on this connection, if one is running: each
    /// write below forgets the digests that may read what it changes, ``scopeDigest(scope:)`` consults it.
    let digests: ScopeDigestMemo.Session?

    init(connection: Connection, manifest: ClientManifest) {
        self.connection = connection
        self.manifest = manifest.manifest
        var tables: [String: LocalSchemaTable] = [:]
        var upserts: [String: String] = [:]
        for table in manifest.localSchema {
            tables[table.tableID] = table
            upserts[table.tableID] = Self.upsertSQL(table)
        }
        self.tables = tables
        self.upserts = upserts
        digests = ScopeDigestMemo.Session.current.flatMap { $0.covers(connection) ? $0 : nil }
    }

    /// `INSERT … ON CONFLICT (key) DO UPDATE` of every column of `table` for `rows` rows, values bound in column
    /// order, row after row. SQLite applies the rows of one statement in order, each as its own upsert.
    static func upsertSQL(_ table: LocalSchemaTable, rows: Int = 1) -> String {
        let names = table.columns.map { SQLiteIdentifier.quote($0.name) }
        let key = SQLiteIdentifier.quote(table.primaryKeyColumn?.name ?? "id")
        let updates = names.filter { $0 != key }.map { "\($0) = excluded.\($0)" }
        let conflict = updates.isEmpty ? "DO NOTHING" : "DO UPDATE SET \(updates.joined(separator: ", "))"
        let tuple = "(\(Array(repeating: "?", count: names.count).joined(separator: ", ")))"
        return """
            INSERT INTO \(SQLiteIdentifier.quote(table.tableName)) (\(names.joined(separator: ", ")))
            VALUES \(Array(repeating: tuple, count: max(1, rows)).joined(separator: ", "))
            ON CONFLICT (\(key)) \(conflict)
            """
    }

    /// Most rows of one multi-row statement of `width` values per row: `rows`, halved while SQLite could not bind
    /// them all (it binds at most 32,766 values).
    static func statementRows(_ rows: Int, width: Int) -> Int {
        var limit = max(1, rows)
        while limit > 1, limit * max(1, width) > 32_766 { limit /= 2 }
        return limit
    }

    /// Loads the active manifest from `_synchro_meta`; throws when the store has no schema.
    static func activeManifest(on connection: Connection) throws -> ClientManifest {
        guard let text = try MetaStore.value(.schemaManifest, on: connection), !text.isEmpty else {
            throw SyncError.invalidState(reason: "the store has no active schema")
        }
        return try ClientManifest(bytes: Array(text.utf8))
    }

    func table(_ tableID: String) throws -> LocalSchemaTable {
        guard let table = tables[tableID] else { throw SyncError.invalidState(reason: "unknown table ID") }
        return table
    }

    /// `record_id`: the primary key rendered as text (`CAST(pk AS TEXT)`).
    func recordID(_ primaryKey: JSONValue) -> String {
        Self.recordID(primaryKey)
    }

    static func recordID(_ primaryKey: JSONValue) -> String {
        switch primaryKey {
        case .number(let number): number.exactInt64.map(String.init) ?? number.literal
        case .string(let string): string
        default: ""
        }
    }

    // MARK: - Value conversion

    /// The SQLite value of a wire value of `type` (`spec/client-store.md` §5.2 storage classes).
    static func sqliteValue(_ value: JSONValue, type: PortableType) throws -> SQLiteValue {
        guard let stored = LocalStorageForm.sqliteValue(value, type: type) else {
            throw SyncError.invalidState(reason: "a verified value has no local storage form")
        }
        return stored
    }
}
