import Foundation
import SQLiteKit
import SynchroClient
import SynchroProtocol
import SynchroStore

/// Writes a seed database in the protocol-3 interchange baseline layout (`spec/seed-format.md` §1.1, §2), the
/// way the upstream exporter does: baseline internal tables, `grdb_migrations` v1…v8, `user_version` 6, the
/// meta rows of §2.3, synced tables without indexes, rows with versions, edges, scopes and receipts, and
/// legacy-queue triggers created after the rows are loaded.
struct InterchangeSeed {
    struct SeedRow {
        let scope: String
        let tableID: String
        let pk: JSONValue
        let row: [JSONMember]
        let sqlValues: [SQLiteValue]
        let version: String
    }

    let manifest: ClientManifest
    let rows: [SeedRow]

    static func demo() throws -> InterchangeSeed {
        let manifest = try demoManifest()
        return InterchangeSeed(manifest: manifest, rows: [
            SeedRow(scope: "catalog", tableID: "tbl_categories", pk: .number(JSONNumber(1)), row: [
                JSONMember("fld_category_id", .number(JSONNumber(1))),
                JSONMember("fld_category_name", .string("Books")),
            ], sqlValues: [1, "Books"], version: "v10"),
            SeedRow(scope: "catalog", tableID: "tbl_categories", pk: .number(JSONNumber(2)), row: [
                JSONMember("fld_category_id", .number(JSONNumber(2))),
                JSONMember("fld_category_name", .string("Games")),
            ], sqlValues: [2, "Games"], version: "v11"),
            SeedRow(scope: "shared-tasks", tableID: "tbl_tasks", pk: .string("t1"), row: [
                JSONMember("fld_task_id", .string("t1")), JSONMember("fld_task_owner", .string("u1")),
                JSONMember("fld_task_title", .string("Seeded")), JSONMember("fld_task_done", .bool(false)),
                JSONMember("fld_task_due", .null), JSONMember("fld_task_position", .number(JSONNumber(1))),
            ], sqlValues: ["t1", "u1", "Seeded", 0, .null, 1], version: "v12"),
        ])
    }

    /// The baseline internal tables of §2.2 (no CHECK, UNIQUE, AUTOINCREMENT or WITHOUT ROWID).
    static let baselineDDL = """
        CREATE TABLE _synchro_pending_changes (record_id TEXT NOT NULL, table_name TEXT NOT NULL,
            operation TEXT NOT NULL, base_updated_at TEXT, client_updated_at TEXT NOT NULL,
            local_revision INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (table_name, record_id));
        CREATE TABLE _synchro_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY);
        CREATE TABLE _synchro_scopes (scope_id TEXT PRIMARY KEY, cursor TEXT, checksum TEXT,
            generation INTEGER NOT NULL DEFAULT 0, local_checksum TEXT NOT NULL DEFAULT '');
        CREATE TABLE _synchro_scope_rows (scope_id TEXT NOT NULL, table_name TEXT NOT NULL, record_id TEXT NOT NULL,
            checksum TEXT NOT NULL, generation INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (scope_id, table_name, record_id));
        CREATE INDEX idx_synchro_scope_rows_record ON _synchro_scope_rows (table_name, record_id);
        CREATE TABLE _synchro_seed_receipts (scope_id TEXT PRIMARY KEY, receipt TEXT NOT NULL,
            schema_version INTEGER NOT NULL, schema_hash TEXT NOT NULL, cardinality INTEGER NOT NULL,
            checksum TEXT NOT NULL);
        CREATE TABLE _synchro_row_versions (table_name TEXT NOT NULL, record_id TEXT NOT NULL,
            server_version TEXT NOT NULL, row_checksum TEXT, PRIMARY KEY (table_name, record_id));
        CREATE TABLE _synchro_rebuild_attempts (scope_id TEXT PRIMARY KEY, rebuild_id TEXT NOT NULL,
            client_generation INTEGER NOT NULL, schema_version INTEGER NOT NULL, schema_hash TEXT NOT NULL,
            generation INTEGER NOT NULL, cursor TEXT, page_limit INTEGER NOT NULL);
        CREATE TABLE _synchro_push_batches (batch_id TEXT PRIMARY KEY, request_json TEXT NOT NULL,
            pending_json TEXT NOT NULL, schema_json TEXT NOT NULL, state TEXT NOT NULL, created_at TEXT NOT NULL,
            completed_at TEXT);
        CREATE TABLE _synchro_rejected_mutations (mutation_id TEXT PRIMARY KEY, table_name TEXT NOT NULL,
            record_id TEXT NOT NULL, status TEXT NOT NULL, code TEXT NOT NULL, message TEXT, server_row_json TEXT,
            server_version TEXT, created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
        CREATE INDEX idx_synchro_rejected_mutations_record ON _synchro_rejected_mutations (table_name, record_id);
        """

    /// The exporter's `local_schema`: no `indexes` member, explicit nulls (§2.4.1).
    var exporterLocalSchema: String {
        let tables: [JSONValue] = manifest.localSchema.map { table in
            .object(JSONObject([
                JSONMember("tableID", .string(table.tableID)), JSONMember("relationID", .string(table.relationID)),
                JSONMember("tableName", .string(table.tableName)),
                JSONMember("primaryKeyFieldID", .string(table.primaryKeyFieldID)),
                JSONMember("createdAtFieldID", table.createdAtFieldID.map(JSONValue.string) ?? .null),
                JSONMember("updatedAtFieldID", table.updatedAtFieldID.map(JSONValue.string) ?? .null),
                JSONMember("deletedAtFieldID", table.deletedAtFieldID.map(JSONValue.string) ?? .null),
                JSONMember("updatedAtColumn", .string(table.updatedAtColumn)),
                JSONMember("deletedAtColumn", .string(table.deletedAtColumn)),
                JSONMember("composition", table.composition.map(JSONValue.string) ?? .null),
                JSONMember("primaryKey", .array(table.primaryKey.map(JSONValue.string))),
                JSONMember("columns", .array(table.columns.map { column in
                    .object(JSONObject([
                        JSONMember("fieldID", .string(column.fieldID)), JSONMember("name", .string(column.name)),
                        JSONMember("logicalType", .string(column.logicalType.rawValue)),
                        JSONMember("nullable", .bool(column.nullable)), JSONMember("writable", .bool(column.writable)),
                        JSONMember("precision", column.precision.map { .number(JSONNumber(Int64($0))) } ?? .null),
                        JSONMember("scale", column.scale.map { .number(JSONNumber(Int64($0))) } ?? .null),
                        JSONMember("sqliteDefaultSQL", .null), JSONMember("isPrimaryKey", .bool(column.isPrimaryKey)),
                    ]))
                })),
            ]))
        }
        return (try? CanonicalJSON.string(.array(tables))) ?? ""
    }

    func write(to path: String, legacyQueueRow: Bool = false) throws {
        let db = try Connection(path: path)
        defer { db.close() }
        try db.setJournalMode(.wal)
        try db.execute(Self.baselineDDL)
        for migration in StoreMigration.interchangeBaseline {
            try db.run("INSERT INTO grdb_migrations VALUES (?)", [.text(migration.identifier)])
        }
        try writeMeta(db)
        for table in manifest.localSchema {
            try db.execute(syncedTableDDL(table))
        }
        try writeRows(db)
        for table in manifest.localSchema {
            try db.execute(legacyInsertTrigger(table))
        }
        if legacyQueueRow {
            try db.run("""
                INSERT INTO _synchro_pending_changes (record_id, table_name, operation, base_updated_at,
                    client_updated_at, local_revision)
                VALUES ('t1', 'tasks', 'update', 'v12', '2024-05-01T10:00:00.000Z', 3)
                """)
        }
        try db.execute("PRAGMA user_version = 6")
        try db.checkpoint(.truncate)
        try db.setJournalMode(.delete)
    }

    private func writeMeta(_ db: Connection) throws {
        let reference = manifest.reference
        let meta: [(String, String)] = [
            ("sync_lock", "0"), ("checkpoint", "0"), ("schema_version", String(reference.version)),
            ("schema_hash", reference.hash), ("local_schema", exporterLocalSchema),
            ("schema_manifest", try CanonicalJSON.string(manifest.json)), ("scope_set_version", "0"),
            ("snapshot_complete", "1"), ("seed_export_id", "0b9f4c1e-8d2a-4f6b-9c3d-5e7a1b2c3d4e"),
            ("seed_export_manifest_hash", String(repeating: "ab", count: 32)), ("seed_stream_generation", "g1"),
            ("seed_snapshot_boundary", #"{"position_kind":"generation_start"}"#), ("seed_page_limit", "1000"),
        ]
        for (key, value) in meta {
            try db.run("INSERT INTO _synchro_meta (key, value) VALUES (?, ?)", [.text(key), .text(value)])
        }
    }

    private func writeRows(_ db: Connection) throws {
        var digester = RowDigester(manifest: manifest.manifest)
        var scopes: [String: [(identity: RowIdentity, rowDigest: [UInt8])]] = [:]
        for row in rows {
            let table = try requireTable(row.tableID)
            let placeholders = Array(repeating: "?", count: row.sqlValues.count).joined(separator: ", ")
            try db.run("INSERT INTO \(SQLiteIdentifier.quote(table.tableName)) VALUES (\(placeholders))", row.sqlValues)
            let digest = try digester.digest(
                tableID: row.tableID, primaryKey: row.pk, row: .object(JSONObject(row.row)), serverVersion: row.version)
            let recordID = row.pk.stringValue ?? row.pk.numberValue?.literal ?? ""
            let checksum = try CanonicalJSON.string(try Checksum(digest: digest.digest).json)
            try db.run("INSERT INTO _synchro_row_versions VALUES (?, ?, ?, ?)",
                       [.text(table.tableName), .text(recordID), .text(row.version), .text(checksum)])
            try db.run("INSERT INTO _synchro_scope_rows VALUES (?, ?, ?, ?, 0)",
                       [.text(row.scope), .text(table.tableName), .text(recordID), .text(Hex.encode(digest.digest))])
            scopes[row.scope, default: []].append((digest.identity, digest.digest))
        }
        for (scope, entries) in scopes.sorted(by: { $0.key < $1.key }) {
            let digest = try ScopeDigest.compute(
                schemaHash: manifest.manifest.schemaHashOctets, scopeID: scope, entries: entries)
            let checksum = try CanonicalJSON.string(digest.checksum.json)
            try db.run("INSERT INTO _synchro_scopes VALUES (?, NULL, ?, 0, ?)",
                       [.text(scope), .text(checksum), .text(checksum)])
            try db.run("INSERT INTO _synchro_seed_receipts VALUES (?, ?, ?, ?, ?, ?)", [
                .text(scope), .text("receipt-\(scope)"), .integer(manifest.reference.version),
                .text(manifest.reference.hash), .integer(Int64(entries.count)), .text(checksum),
            ])
        }
    }

    private func requireTable(_ tableID: String) throws -> LocalSchemaTable {
        guard let table = manifest.localSchema.first(where: { $0.tableID == tableID }) else {
            throw SQLiteError(reason: .sqlite, code: .error, message: "unknown table")
        }
        return table
    }

    private func syncedTableDDL(_ table: LocalSchemaTable) -> String {
        let columns = table.columns.map { column -> String in
            let type = switch column.logicalType {
            case .int, .int64, .boolean: "INTEGER"
            case .float: "REAL"
            case .bytes: "BLOB"
            default: "TEXT"
            }
            var definition = "\(SQLiteIdentifier.quote(column.name)) \(type)"
            if column.isPrimaryKey { definition += " PRIMARY KEY" }
            if !column.nullable && !column.isPrimaryKey { definition += " NOT NULL" }
            return definition
        }
        let name = SQLiteIdentifier.quote(table.tableName)
        return "CREATE TABLE IF NOT EXISTS \(name) (\(columns.joined(separator: ", ")))"
    }

    /// A legacy-queue trigger without UPSERT (only its presence matters: the ledger migration drops it).
    private func legacyInsertTrigger(_ table: LocalSchemaTable) -> String {
        let key = SQLiteIdentifier.quote(table.primaryKey[0])
        return """
            CREATE TRIGGER \(SQLiteIdentifier.quote("_synchro_cdc_insert_\(table.tableName)"))
            AFTER INSERT ON \(SQLiteIdentifier.quote(table.tableName))
            WHEN (SELECT value FROM _synchro_meta WHERE key = 'sync_lock') = '0'
            BEGIN
                INSERT INTO _synchro_pending_changes (record_id, table_name, operation, client_updated_at)
                VALUES (CAST(NEW.\(key) AS TEXT), '\(table.tableName)', 'create',
                        strftime('%Y-%m-%dT%H:%M:%fZ', 'now'));
            END
            """
    }
}
