import Foundation
import SQLiteKit

/// The capture triggers a seed carries (`spec/seed-format.md` §2.4.2): three per synced table, guarded by
/// `sync_lock = '0'`, writing the legacy queue `_synchro_pending_changes`, and free of UPSERT syntax so that
/// SQLite 3.9 (Android API 24) still parses the schema. Both SDKs drop every `_synchro_cdc_%` trigger while
/// upgrading a seed, so this text matters to verification (exact text after trimming) and parse
/// compatibility only.
public enum LegacyCaptureTriggers {
    /// `(name, CREATE TRIGGER statement)` for the insert, update and delete triggers of `table`, in that order.
    /// The statements are written the way `sqlite_schema` stores them, so the stored text equals them.
    public static func statements(for table: LocalSchemaTable) -> [(name: String, sql: String)] {
        guard let key = table.primaryKeyColumn else { return [] }
        let t = Names(table: table, key: key)
        return [
            (t.insertName, insert(t)),
            (t.updateName, update(t, deletedAt: table.deletedAtColumn)),
            (t.deleteName, delete(t, deletedAt: table.deletedAtColumn)),
        ]
    }

    /// The names of the three triggers of a table named `tableName`.
    public static func names(tableName: String) -> [String] {
        ["_synchro_cdc_insert_", "_synchro_cdc_update_", "_synchro_cdc_delete_"].map { $0 + tableName }
    }

    private struct Names {
        let table: String
        let literal: String
        let key: String
        let insertName: String
        let updateName: String
        let deleteName: String

        init(table: LocalSchemaTable, key: LocalSchemaColumn) {
            self.table = SQLiteIdentifier.quote(table.tableName)
            literal = "'" + table.tableName.replacingOccurrences(of: "'", with: "''") + "'"
            self.key = SQLiteIdentifier.quote(key.name)
            let names = LegacyCaptureTriggers.names(tableName: table.tableName)
            insertName = names[0]
            updateName = names[1]
            deleteName = names[2]
        }

        func recordID(_ row: String) -> String { "CAST(\(row).\(key) AS TEXT)" }

        func queueRow(_ row: String) -> String {
            "table_name = \(literal) AND record_id = \(recordID(row))"
        }

        func serverVersion(_ row: String) -> String {
            "(SELECT server_version FROM _synchro_row_versions WHERE \(queueRow(row)))"
        }
    }

    private static let guardClause = "WHEN (SELECT value FROM _synchro_meta WHERE key = 'sync_lock') = '0'"
    /// Now as a portable `datetime` (microsecond precision, `Z`).
    private static let now = "strftime('%Y-%m-%dT%H:%M:%f000Z', 'now')"

    private static func insert(_ t: Names) -> String {
        """
        CREATE TRIGGER \(SQLiteIdentifier.quote(t.insertName)) AFTER INSERT ON \(t.table) \(guardClause) BEGIN
            UPDATE _synchro_pending_changes SET
                operation = CASE WHEN operation = 'delete' THEN 'update' ELSE operation END,
                local_revision = local_revision + 1,
                client_updated_at = \(now)
            WHERE \(t.queueRow("NEW"));
            INSERT INTO _synchro_pending_changes
                (record_id, table_name, operation, base_updated_at, client_updated_at, local_revision)
            SELECT \(t.recordID("NEW")), \(t.literal), 'create', NULL, \(now), 1
            WHERE NOT EXISTS (SELECT 1 FROM _synchro_pending_changes WHERE \(t.queueRow("NEW")));
        END
        """
    }

    private static func update(_ t: Names, deletedAt: String) -> String {
        let operation: String
        var cleanup = ""
        if deletedAt.isEmpty {
            operation = "'update'"
        } else {
            let column = SQLiteIdentifier.quote(deletedAt)
            operation = "(CASE WHEN OLD.\(column) IS NULL AND NEW.\(column) IS NOT NULL THEN 'delete' ELSE 'update' END)"
            cleanup = """

                    DELETE FROM _synchro_pending_changes
                    WHERE \(t.queueRow("NEW")) AND operation = 'delete' AND base_updated_at IS NULL;
                """
        }
        return """
            CREATE TRIGGER \(SQLiteIdentifier.quote(t.updateName)) AFTER UPDATE ON \(t.table) \(guardClause) BEGIN
                UPDATE _synchro_pending_changes SET
                    operation = CASE
                        WHEN operation = 'create' AND \(operation) = 'update' THEN 'create'
                        ELSE \(operation) END,
                    base_updated_at = CASE
                        WHEN operation = 'create' AND \(operation) = 'delete' THEN NULL
                        ELSE COALESCE(base_updated_at, \(t.serverVersion("NEW"))) END,
                    local_revision = local_revision + 1,
                    client_updated_at = \(now)
                WHERE \(t.queueRow("NEW"));
                INSERT INTO _synchro_pending_changes
                    (record_id, table_name, operation, base_updated_at, client_updated_at, local_revision)
                SELECT \(t.recordID("NEW")), \(t.literal), \(operation), \(t.serverVersion("NEW")), \(now), 1
                WHERE NOT EXISTS (SELECT 1 FROM _synchro_pending_changes WHERE \(t.queueRow("NEW")));\(cleanup)
            END
            """
    }

    private static func delete(_ t: Names, deletedAt: String) -> String {
        if !deletedAt.isEmpty {
            let column = SQLiteIdentifier.quote(deletedAt)
            return """
                CREATE TRIGGER \(SQLiteIdentifier.quote(t.deleteName)) BEFORE DELETE ON \(t.table) \(guardClause) BEGIN
                    UPDATE \(t.table) SET \(column) = \(now) WHERE \(t.key) = OLD.\(t.key) AND \(column) IS NULL;
                    SELECT RAISE(IGNORE);
                END
                """
        }
        return """
            CREATE TRIGGER \(SQLiteIdentifier.quote(t.deleteName)) AFTER DELETE ON \(t.table) \(guardClause) BEGIN
                UPDATE _synchro_pending_changes SET
                    operation = 'delete',
                    base_updated_at = COALESCE(base_updated_at, \(t.serverVersion("OLD"))),
                    local_revision = local_revision + 1,
                    client_updated_at = \(now)
                WHERE \(t.queueRow("OLD"));
                INSERT INTO _synchro_pending_changes
                    (record_id, table_name, operation, base_updated_at, client_updated_at, local_revision)
                SELECT \(t.recordID("OLD")), \(t.literal), 'delete', \(t.serverVersion("OLD")), \(now), 1
                WHERE NOT EXISTS (SELECT 1 FROM _synchro_pending_changes WHERE \(t.queueRow("OLD")));
            END
            """
    }
}
