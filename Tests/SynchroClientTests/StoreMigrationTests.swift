import Foundation
import SQLiteKit
import SynchroClient
import Testing
import _SeedkitTestSupport
import SynchroStore

@Suite("Store migrations")
struct StoreMigrationTests {
    /// The final table set and each table's physical columns on a new file (`spec/client-store.md` §4).
    static let freshTables: [(String, [String])] = [
        ("_synchro_backoff", ["singleton", "resume_state", "work_identity", "retry_classification", "attempt_count",
                              "next_retry_at_ms"]),
        ("_synchro_blocking_error", ["singleton", "operation", "code", "retryable", "message", "recovery_action",
                                     "metadata_json", "created_at"]),
        ("_synchro_capture_context", ["statement_token", "table_name", "operation"]),
        ("_synchro_capture_fields", ["statement_token", "table_name", "column_name"]),
        ("_synchro_meta", ["key", "value"]),
        ("_synchro_mutation_values", ["mutation_id", "field_id", "logical_type", "value_kind", "value_integer",
                                      "value_real", "value_text", "value_blob"]),
        ("_synchro_pending_changes", [
            "local_order", "mutation_id", "capture_uuid", "table_id", "table_name", "record_id", "pk_field_id",
            "pk_logical_type", "operation", "authored_schema_version", "authored_schema_hash", "base_version",
            "client_version", "lifecycle_state", "source_kind", "dependency_mutation_id", "normalized_mutation_id",
            "sealed_batch_id", "sealed_ordinal", "atomic_group_id", "accepted_json", "rejected_json", "created_at",
            "updated_at",
        ]),
        ("_synchro_push_batch_members", ["batch_id", "mutation_id", "ordinal"]),
        ("_synchro_push_batches", ["batch_id", "request_json", "pending_json", "schema_json", "state", "created_at",
                                   "completed_at"]),
        ("_synchro_rebuild_attempts", ["scope_id", "rebuild_id", "client_generation", "schema_version",
                                       "schema_hash", "generation", "cursor", "page_limit"]),
        ("_synchro_rebuild_page_receipts", ["scope_id", "rebuild_id", "request_cursor_is_null", "request_cursor",
                                            "request_json", "response_json", "is_final", "final_scope_cursor",
                                            "final_checksum"]),
        ("_synchro_rejected_mutations", ["mutation_id", "table_name", "record_id", "status", "code", "message",
                                         "server_row_json", "server_version", "created_at", "updated_at",
                                         "mutation_json", "rejected_json"]),
        ("_synchro_row_versions", ["table_name", "record_id", "server_version", "row_checksum"]),
        ("_synchro_schema_archive", ["schema_version", "schema_hash", "schema_json", "created_at"]),
        ("_synchro_schema_migration", [
            "singleton", "journal_version", "source_schema_version", "source_schema_hash", "target_schema_version",
            "target_schema_hash", "target_manifest_json", "action", "affected_scopes_json",
            "scope_cursor_updates_json", "migration_plan_version", "migration_plan_json", "migration_plan_hash",
            "phase", "is_schema_reset",
        ]),
        ("_synchro_scope_rows", ["scope_id", "table_name", "record_id", "checksum", "generation"]),
        ("_synchro_scopes", ["scope_id", "cursor", "checksum", "generation", "local_checksum"]),
        ("_synchro_seed_receipts", ["scope_id", "receipt", "schema_version", "schema_hash", "cardinality",
                                    "checksum"]),
        ("grdb_migrations", ["identifier"]),
    ]

    static let freshIndexes: [(String, String, [String])] = [
        ("idx_synchro_mutation_values_field", "_synchro_mutation_values", ["field_id", "mutation_id"]),
        ("idx_synchro_pending_changes_batch", "_synchro_pending_changes", ["sealed_batch_id", "sealed_ordinal"]),
        ("idx_synchro_pending_changes_dependency", "_synchro_pending_changes",
         ["dependency_mutation_id", "lifecycle_state"]),
        ("idx_synchro_pending_changes_normalized", "_synchro_pending_changes", ["normalized_mutation_id"]),
        ("idx_synchro_pending_changes_row_order", "_synchro_pending_changes",
         ["table_id", "table_name", "record_id", "local_order"]),
        ("idx_synchro_pending_changes_state_order", "_synchro_pending_changes", ["lifecycle_state", "local_order"]),
        ("idx_synchro_pending_protocol_row_order", "_synchro_pending_changes",
         ["table_id", "pk_field_id", "pk_logical_type", "record_id", "local_order"]),
        ("idx_synchro_rejected_mutations_record", "_synchro_rejected_mutations", ["table_name", "record_id"]),
        ("idx_synchro_scope_rows_record", "_synchro_scope_rows", ["table_name", "record_id"]),
    ]

    @Test("a new file records exactly the 19 upstream migration identifiers")
    func migrationIdentifiers() throws {
        let fixture = try StoreFixture(applyDemo: false)
        let recorded = try fixture.inspect {
            try $0.query("SELECT identifier FROM grdb_migrations") { try $0.text(at: 0) }
        }
        #expect(Set(recorded) == Set(StoreMigration.allCases.map(\.identifier)))
        #expect(recorded.count == 19)
        #expect(StoreMigration.allCases.last?.identifier == "synchro_v18_key_only_insert_capture")
        #expect(fixture.store.openedLayout.kind == .empty)
    }

    @Test("a new file has exactly the final tables with upstream's physical column order")
    func tablesAndColumns() throws {
        let fixture = try StoreFixture(applyDemo: false)
        try fixture.inspect { db in
            let tables = try db.query(
                "SELECT name FROM sqlite_schema WHERE type = 'table' AND name <> 'sqlite_sequence' ORDER BY name"
            ) { try $0.text(at: 0) }
            #expect(tables == Self.freshTables.map(\.0))
            for (table, columns) in Self.freshTables {
                #expect(try db.columns(of: table).map(\.name) == columns, "columns of \(table)")
            }
        }
    }

    @Test("a new file has exactly the final named indexes")
    func indexes() throws {
        let fixture = try StoreFixture(applyDemo: false)
        try fixture.inspect { db in
            let names = try db.query(
                "SELECT name, tbl_name FROM sqlite_schema WHERE type = 'index' AND sql IS NOT NULL ORDER BY name"
            ) { "\(try $0.text(at: 0)) \(try $0.text(at: 1))" }
            #expect(names == Self.freshIndexes.map { "\($0.0) \($0.1)" })
            for (index, _, columns) in Self.freshIndexes {
                let indexed = try db.query("SELECT name FROM pragma_index_info(?) ORDER BY seqno", [.text(index)]) {
                    try $0.text(at: 0)
                }
                #expect(indexed == columns, "columns of \(index)")
            }
        }
    }

    @Test("a new file's constraints: ledger CHECK, AUTOINCREMENT, WITHOUT ROWID and the value foreign key")
    func constraints() throws {
        let fixture = try StoreFixture(applyDemo: false)
        try fixture.inspect { db in
            func sql(_ table: String) throws -> String {
                try db.scalar("SELECT sql FROM sqlite_schema WHERE name = ?", [.text(table)])?.textValue ?? ""
            }
            #expect(try sql("_synchro_pending_changes").contains("local_order INTEGER PRIMARY KEY AUTOINCREMENT"))
            #expect(try sql("_synchro_pending_changes").contains("CHECK (operation IN ('insert', 'update', 'delete'))"))
            for table in ["_synchro_mutation_values", "_synchro_capture_context", "_synchro_capture_fields",
                          "_synchro_push_batch_members", "_synchro_schema_archive"] {
                #expect(try sql(table).hasSuffix("WITHOUT ROWID"), "\(table) is WITHOUT ROWID")
            }
            let foreignKeys = try db.rows("SELECT \"table\", \"from\", \"to\" FROM pragma_foreign_key_list(?)",
                                          [.text("_synchro_mutation_values")])
            #expect(foreignKeys == [[.text("_synchro_pending_changes"), .text("mutation_id"), .text("mutation_id")]])
        }
    }

    @Test("a new file's meta holds exactly sync_lock '0' and checkpoint '0'; the file is in WAL mode")
    func metaAndJournal() throws {
        let fixture = try StoreFixture(applyDemo: false)
        try fixture.inspect { db in
            let meta = try db.rows("SELECT key, value FROM _synchro_meta ORDER BY key")
            #expect(meta == [[.text("checkpoint"), .text("0")], [.text("sync_lock"), .text("0")]])
            #expect(try db.journalMode() == .wal)
            #expect(try db.userVersion() == 0)
        }
    }

    @Test("reopening a migrated file changes nothing")
    func reopenIsIdempotent() throws {
        let fixture = try StoreFixture()
        try fixture.store.execute(taskInsertSQL("t1", title: "T", position: 1))
        let before = try fixture.inspect(databaseFingerprint)
        try fixture.reopen()
        #expect(fixture.store.openedLayout.kind == .current)
        #expect(fixture.store.openedLayout.pendingMigrations.isEmpty)
        try fixture.reopen()
        #expect(try fixture.inspect(databaseFingerprint) == before)
    }

    @Test("a file recording an unknown migration is a newer layout and is not touched")
    func newerLayout() throws {
        let fixture = try StoreFixture(applyDemo: false)
        fixture.store.close()
        try fixture.inspect { try $0.run("INSERT INTO grdb_migrations VALUES ('synchro_v19_future')") }
        let before = try fixture.inspect(databaseFingerprint)
        let error = try #require(throws: ClientStoreError.self) {
            try ClientStore(configuration: ClientStoreConfiguration(path: fixture.path, clientID: "c"))
        }
        #expect(error == .newerLayout(unknownMigrations: ["synchro_v19_future"]))
        #expect(try fixture.inspect(databaseFingerprint) == before)
    }

    @Test("a file whose recorded steps are not a prefix of the sequence is an unknown layout")
    func nonPrefix() throws {
        let fixture = try StoreFixture(applyDemo: false)
        fixture.store.close()
        try fixture.inspect { try $0.run("DELETE FROM grdb_migrations WHERE identifier = 'synchro_v3_scopes'") }
        let error = try #require(throws: ClientStoreError.self) {
            try ClientStore(configuration: ClientStoreConfiguration(path: fixture.path, clientID: "c"))
        }
        guard case .unknownLayout(.migrationsNotAPrefix) = error else {
            Issue.record("unexpected \(error)")
            return
        }
    }

    @Test("Synchro tables without grdb_migrations (the Kotlin user_version layout) are an unknown layout")
    func kotlinLayout() throws {
        let directory = try TemporaryDirectory(prefix: "synchro-client")
        let path = directory.path("kotlin.db")
        let db = try Connection(path: path)
        try db.execute("CREATE TABLE _synchro_client_state (k TEXT); PRAGMA user_version = 14;")
        db.close()
        let error = try #require(throws: ClientStoreError.self) {
            try ClientStore(configuration: ClientStoreConfiguration(path: path, clientID: "c"))
        }
        #expect(error == .unknownLayout(.synchroTablesWithoutMigrationTable(userVersion: 14)))
        #expect(error.rule == "unknown_layout.synchro_tables_without_migration_table")
    }

    @Test("a recorded step whose tables are missing fails verification with a typed error")
    func missingTable() throws {
        let fixture = try StoreFixture(applyDemo: false)
        fixture.store.close()
        try fixture.inspect { try $0.execute("DROP TABLE _synchro_backoff") }
        let error = try #require(throws: ClientStoreError.self) {
            try ClientStore(configuration: ClientStoreConfiguration(path: fixture.path, clientID: "c"))
        }
        #expect(error == .unknownLayout(.missingTable("_synchro_backoff")))
    }

    @Test("an empty client ID is refused before the file is opened")
    func invalidClientID() throws {
        let directory = try TemporaryDirectory(prefix: "synchro-client")
        let error = try #require(throws: ClientStoreError.self) {
            try ClientStore(configuration: ClientStoreConfiguration(path: directory.path("x.db"), clientID: ""))
        }
        #expect(error.rule == "invalid_configuration")
    }
}
