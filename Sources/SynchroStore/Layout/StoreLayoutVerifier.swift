import SQLiteKit

/// The final layout after all migration steps (`spec/client-store.md` §4), checked after every open so that a
/// file whose recorded steps do not match its tables fails with a typed error instead of misbehaving later.
package enum StoreLayoutVerifier {
    /// Every Synchro table and its columns (order-insensitive: upgraded files differ in physical order).
    package static let tables: [String: [String]] = [
        "grdb_migrations": ["identifier"],
        "_synchro_meta": ["key", "value"],
        "_synchro_scopes": ["scope_id", "cursor", "checksum", "generation", "local_checksum"],
        "_synchro_scope_rows": ["scope_id", "table_name", "record_id", "checksum", "generation"],
        "_synchro_row_versions": ["table_name", "record_id", "server_version", "row_checksum"],
        "_synchro_pending_changes": [
            "local_order", "mutation_id", "capture_uuid", "table_id", "table_name", "record_id", "pk_field_id",
            "pk_logical_type", "operation", "authored_schema_version", "authored_schema_hash", "base_version",
            "client_version", "lifecycle_state", "source_kind", "dependency_mutation_id", "normalized_mutation_id",
            "sealed_batch_id", "sealed_ordinal", "atomic_group_id", "accepted_json", "rejected_json", "created_at",
            "updated_at",
        ],
        "_synchro_mutation_values": [
            "mutation_id", "field_id", "logical_type", "value_kind", "value_integer", "value_real", "value_text",
            "value_blob",
        ],
        "_synchro_capture_context": ["statement_token", "table_name", "operation"],
        "_synchro_capture_fields": ["statement_token", "table_name", "column_name"],
        "_synchro_push_batches": [
            "batch_id", "request_json", "pending_json", "schema_json", "state", "created_at", "completed_at",
        ],
        "_synchro_push_batch_members": ["batch_id", "mutation_id", "ordinal"],
        "_synchro_rejected_mutations": [
            "mutation_id", "table_name", "record_id", "status", "code", "message", "server_row_json",
            "server_version", "created_at", "updated_at", "mutation_json", "rejected_json",
        ],
        "_synchro_seed_receipts": ["scope_id", "receipt", "schema_version", "schema_hash", "cardinality", "checksum"],
        "_synchro_rebuild_attempts": [
            "scope_id", "rebuild_id", "client_generation", "schema_version", "schema_hash", "generation", "cursor",
            "page_limit",
        ],
        "_synchro_rebuild_page_receipts": [
            "scope_id", "rebuild_id", "request_cursor_is_null", "request_cursor", "request_json", "response_json",
            "is_final", "final_scope_cursor", "final_checksum",
        ],
        "_synchro_backoff": [
            "singleton", "resume_state", "work_identity", "retry_classification", "attempt_count", "next_retry_at_ms",
        ],
        "_synchro_blocking_error": [
            "singleton", "operation", "code", "retryable", "message", "recovery_action", "metadata_json", "created_at",
        ],
        "_synchro_schema_archive": ["schema_version", "schema_hash", "schema_json", "created_at"],
        "_synchro_schema_migration": [
            "singleton", "journal_version", "source_schema_version", "source_schema_hash", "target_schema_version",
            "target_schema_hash", "target_manifest_json", "action", "affected_scopes_json",
            "scope_cursor_updates_json", "migration_plan_version", "migration_plan_json", "migration_plan_hash",
            "phase", "is_schema_reset",
        ],
    ]

    package static func verify(_ connection: Connection) throws(ClientStoreError) {
        do {
            for (table, expected) in tables.sorted(by: { $0.key < $1.key }) {
                let present = Set(try columnNames(of: table, on: connection))
                guard !present.isEmpty else { throw ClientStoreError.unknownLayout(.missingTable(table)) }
                let missing = expected.filter { !present.contains($0) }
                guard missing.isEmpty else {
                    throw ClientStoreError.unknownLayout(.missingColumns(table: table, columns: missing))
                }
            }
        } catch let error as ClientStoreError {
            throw error
        } catch let error as SQLiteError {
            throw .sqlite(error)
        } catch {
            throw .sqlite(SQLiteError(reason: .sqlite, code: .error, message: "\(error)"))
        }
    }
}
