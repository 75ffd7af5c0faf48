import SQLiteKit
import SynchroProtocol

/// Generates the three capture triggers of one synced table (`spec/client-store.md` §6).
///
/// The behaviour is the upstream Swift client's: a `sync_lock` guard on every trigger (server-apply mode), the
/// schema guard, an insert that aborts without its own capture context and captures exactly the context's
/// writable columns (a key-only insert captures none), an update that captures each changed mask-admitted
/// writable column or a soft-delete transition as a delete, and a delete that becomes a soft delete when the
/// table has a deleted-at column. The text is ours; it uses only built-in SQL functions and no UPSERT, so the
/// triggers run under any SDK and on old SQLite releases.
package struct CaptureTriggerSQL {
    package let table: LocalSchemaTable

    /// Trigger names, unquoted: `_synchro_cdc_{insert,update,delete}_<table>`.
    package static func names(forTable tableName: String) -> [String] {
        ["insert", "update", "delete"].map { "_synchro_cdc_\($0)_\(tableName)" }
    }

    /// Three `DROP TRIGGER IF EXISTS` statements followed by the three `CREATE TRIGGER` statements.
    package func statements() -> [String] {
        let names = Self.names(forTable: table.tableName).map(SQLiteIdentifier.quote)
        return names.map { "DROP TRIGGER IF EXISTS \($0)" } + [insertTrigger(), updateTrigger(), deleteTrigger()]
    }

    // MARK: - Building blocks

    private static let unresolvedStates =
        "('accepted', 'rejected', 'exceeds_push_limit', 'superseded_before_send', 'cancelled_before_send')"

    private static let lockGuard = "(SELECT value FROM _synchro_meta WHERE key = 'sync_lock') = '0'"

    /// A random lowercase version-4 UUID from SQLite's generator (`random() & 3` picks the variant nibble
    /// without the overflow `abs()` has for the smallest integer).
    private static let uuidExpression = "lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4' || "
        + "substr(hex(randomblob(2)), 2) || '-' || substr('89ab', 1 + (random() & 3), 1) || "
        + "substr(hex(randomblob(2)), 2) || '-' || hex(randomblob(6)))"

    private static let schemaGuard = """
        SELECT RAISE(ABORT, 'synchro capture requires verified schema metadata')
            WHERE NOT EXISTS (
                SELECT 1 FROM _synchro_schema_archive AS archive
                WHERE CAST((SELECT value FROM _synchro_meta WHERE key = 'schema_version') AS INTEGER) > 0
                  AND COALESCE((SELECT value FROM _synchro_meta WHERE key = 'schema_hash'), '') <> ''
                  AND archive.schema_version
                      = CAST((SELECT value FROM _synchro_meta WHERE key = 'schema_version') AS INTEGER)
                  AND archive.schema_hash = (SELECT value FROM _synchro_meta WHERE key = 'schema_hash'));
        """

    private var tableLiteral: String { SQLName.literal(table.tableName) }
    private var quotedTable: String { SQLiteIdentifier.quote(table.tableName) }
    private var quotedKey: String { SQLiteIdentifier.quote(table.primaryKeyColumn?.name ?? "id") }
    private var keyType: PortableType { table.primaryKeyColumn?.logicalType ?? .string }

    private var softDeleteColumn: String? {
        table.deletedAtColumn.isEmpty ? nil : SQLiteIdentifier.quote(table.deletedAtColumn)
    }

    /// `deleted_at` went from NULL to non-NULL (only for tables with a deleted-at column).
    private var softDeleteTransition: String {
        guard let column = softDeleteColumn else { return "0" }
        return "(NEW.\(column) IS NOT NULL AND OLD.\(column) IS NULL)"
    }

    /// The newest unresolved ledger row of the same logical row.
    private func dependency(record: String) -> String {
        """
        (SELECT mutation_id FROM _synchro_pending_changes
                 WHERE table_id = \(SQLName.literal(table.tableID))
                   AND pk_field_id = \(SQLName.literal(table.primaryKeyFieldID))
                   AND pk_logical_type = \(SQLName.literal(keyType.rawValue))
                   AND record_id = CAST(\(record) AS TEXT)
                   AND lifecycle_state NOT IN \(Self.unresolvedStates)
                 ORDER BY local_order DESC LIMIT 1)
        """
    }

    /// NULL when a dependency exists (its outcome fixes the base later), else the row's stored server version.
    private func baseVersion(record: String) -> String {
        """
        CASE WHEN \(dependency(record: record)) IS NOT NULL THEN NULL
                 ELSE (SELECT server_version FROM _synchro_row_versions
                       WHERE table_name = \(tableLiteral) AND record_id = CAST(\(record) AS TEXT)) END
        """
    }

    /// Whether the authored mask (any context row of this table) names `column`.
    private func maskNames(_ column: LocalSchemaColumn) -> String {
        "EXISTS (SELECT 1 FROM _synchro_capture_context AS context JOIN _synchro_capture_fields AS field "
            + "ON field.statement_token = context.statement_token AND field.table_name = context.table_name "
            + "WHERE context.table_name = \(tableLiteral) AND field.column_name = \(SQLName.literal(column.name)))"
    }

    /// An update captures a changed writable column when no context exists at all (ordinary UPDATE) or the
    /// mask names it.
    private func updateCaptures(_ column: LocalSchemaColumn) -> String {
        let quoted = SQLiteIdentifier.quote(column.name)
        return "(NOT (NEW.\(quoted) IS OLD.\(quoted)) AND (NOT EXISTS (SELECT 1 FROM _synchro_capture_context) "
            + "OR \(maskNames(column))))"
    }

    private func ledgerInsert(operation: String, base: String, record: String, condition: String) -> String {
        """
        INSERT INTO _synchro_pending_changes
                (mutation_id, table_id, table_name, record_id, pk_field_id, pk_logical_type, operation,
                 authored_schema_version, authored_schema_hash, base_version, client_version, lifecycle_state,
                 source_kind, dependency_mutation_id, atomic_group_id, created_at, updated_at)
            SELECT \(Self.uuidExpression),
                   \(SQLName.literal(table.tableID)), \(tableLiteral), CAST(\(record) AS TEXT),
                   \(SQLName.literal(table.primaryKeyFieldID)), \(SQLName.literal(keyType.rawValue)), \(operation),
                   CAST((SELECT value FROM _synchro_meta WHERE key = 'schema_version') AS INTEGER),
                   (SELECT value FROM _synchro_meta WHERE key = 'schema_hash'),
                   \(base), \(CaptureTimestamp.sqlExpression), 'unsealed', 'application',
                   \(dependency(record: record)),
                   (SELECT value FROM _synchro_meta WHERE key = 'atomic_group_id'),
                   \(CaptureTimestamp.sqlExpression), \(CaptureTimestamp.sqlExpression)
            WHERE \(condition);
            UPDATE _synchro_pending_changes SET capture_uuid = mutation_id
            WHERE local_order = (SELECT max(local_order) FROM _synchro_pending_changes)
              AND capture_uuid IS NULL AND source_kind = 'application';
        """
    }

    /// The storage check and the value row of one writable column, both conditioned on `captured`.
    private func valueRow(_ column: LocalSchemaColumn, captured: String) -> String {
        let new = "NEW.\(SQLiteIdentifier.quote(column.name))"
        let (kind, slot, storage) = Self.valueShape(column.logicalType)
        let slots = ["value_integer", "value_real", "value_text", "value_blob"].map { $0 == slot ? new : "NULL" }
        return """
            SELECT RAISE(ABORT, 'synchro capture storage type is invalid')
                WHERE \(new) IS NOT NULL AND typeof(\(new)) NOT IN \(storage) AND \(captured);
                INSERT INTO _synchro_mutation_values
                    (mutation_id, field_id, logical_type, value_kind, value_integer, value_real, value_text, value_blob)
                SELECT mutation_id, \(SQLName.literal(column.fieldID)), \(SQLName.literal(column.logicalType.rawValue)),
                       CASE WHEN \(new) IS NULL THEN 'null' ELSE '\(kind)' END, \(slots.joined(separator: ", "))
                FROM _synchro_pending_changes
                WHERE local_order = (SELECT max(local_order) FROM _synchro_pending_changes) AND \(captured);
            """
    }

    /// The value kind, the one populated value column and the storage classes a type accepts (§6).
    package static func valueShape(_ type: PortableType) -> (kind: String, slot: String, storage: String) {
        switch type {
        case .boolean: ("boolean", "value_integer", "('integer')")
        case .int, .int64: ("integer", "value_integer", "('integer')")
        case .float: ("real", "value_real", "('integer', 'real')")
        case .bytes: ("blob", "value_blob", "('blob')")
        case .string, .decimal, .datetime, .date, .time, .json: ("text", "value_text", "('text')")
        }
    }

    // MARK: - Triggers

    private func insertTrigger() -> String {
        let name = SQLiteIdentifier.quote(Self.names(forTable: table.tableName)[0])
        let values = table.writableColumns.map { valueRow($0, captured: maskNames($0)) }
        return """
            CREATE TRIGGER \(name)
            AFTER INSERT ON \(quotedTable)
            WHEN \(Self.lockGuard)
            BEGIN
                \(Self.schemaGuard)
                SELECT RAISE(ABORT, 'synced insert has no authored capture context')
                    WHERE NOT EXISTS (SELECT 1 FROM _synchro_capture_context WHERE table_name = \(tableLiteral));
                \(ledgerInsert(operation: "'insert'", base: "NULL", record: "NEW.\(quotedKey)", condition: "1"))
                \(values.joined(separator: "\n    "))
            END
            """
    }

    private func updateTrigger() -> String {
        let name = SQLiteIdentifier.quote(Self.names(forTable: table.tableName)[1])
        let changes = table.writableColumns.map(updateCaptures)
        let anyChange = changes.isEmpty ? "0" : "(\(changes.joined(separator: " OR ")))"
        let condition = "\(anyChange) OR \(softDeleteTransition)"
        let operation = "CASE WHEN \(softDeleteTransition) THEN 'delete' ELSE 'update' END"
        let values = table.writableColumns.map {
            valueRow($0, captured: "\(updateCaptures($0)) AND NOT \(softDeleteTransition)")
        }
        let record = "NEW.\(quotedKey)"
        return """
            CREATE TRIGGER \(name)
            AFTER UPDATE ON \(quotedTable)
            WHEN \(Self.lockGuard)
            BEGIN
                SELECT RAISE(ABORT, 'synchro primary key changes are not supported')
                    WHERE NOT (NEW.\(quotedKey) IS OLD.\(quotedKey));
                \(Self.schemaGuard)
                \(ledgerInsert(operation: operation, base: baseVersion(record: record), record: record,
                               condition: condition))
                \(values.joined(separator: "\n    "))
            END
            """
    }

    private func deleteTrigger() -> String {
        let name = SQLiteIdentifier.quote(Self.names(forTable: table.tableName)[2])
        guard let softDeleteColumn else {
            let record = "OLD.\(quotedKey)"
            return """
                CREATE TRIGGER \(name)
                AFTER DELETE ON \(quotedTable)
                WHEN \(Self.lockGuard)
                BEGIN
                    \(Self.schemaGuard)
                    \(ledgerInsert(operation: "'delete'", base: baseVersion(record: record), record: record,
                                   condition: "1"))
                END
                """
        }
        // The nested UPDATE fires the update trigger, which captures the delete; RAISE(IGNORE) keeps the row.
        return """
            CREATE TRIGGER \(name)
            BEFORE DELETE ON \(quotedTable)
            WHEN \(Self.lockGuard)
            BEGIN
                \(Self.schemaGuard)
                UPDATE \(quotedTable) SET \(softDeleteColumn) = \(CaptureTimestamp.sqlExpression)
                    WHERE \(quotedKey) = OLD.\(quotedKey);
                SELECT RAISE(IGNORE);
            END
            """
    }
}
