import SQLiteKit

/// Steps v9 … v18: the append-only mutation ledger and everything after it (`spec/client-store.md` §2, §4).
enum LedgerSteps {
    /// One row of the pre-ledger queue.
    private struct LegacyQueueRow {
        let recordID: String
        let tableName: String
        let operation: String
        let baseVersion: String?
        let clientVersion: String
        let localRevision: Int64
    }

    /// Replaces the one-row-per-record queue with the ledger. Each legacy row becomes a `legacy_blocked`,
    /// `legacy_import` entry with a deterministic ID and no authored payload; a verified stored schema is
    /// archived and gets current capture triggers, so a seed keeps capturing offline writes.
    static func v9(_ db: Connection, clock: ClientClock) throws {
        let legacyRows = try readLegacyQueue(db)
        let oldTriggers = try db.query(
            "SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE '_synchro_cdc_%'"
        ) { try $0.text(at: 0) }
        for name in oldTriggers {
            try db.execute("DROP TRIGGER IF EXISTS \(SQLiteIdentifier.quote(name))")
        }
        try db.execute(ledgerDDL)
        try db.execute("""
            CREATE TABLE IF NOT EXISTS _synchro_mutation_values (
                mutation_id TEXT NOT NULL,
                field_id TEXT NOT NULL,
                logical_type TEXT NOT NULL,
                value_kind TEXT NOT NULL CHECK (value_kind IN ('null', 'boolean', 'integer', 'real', 'text', 'blob')),
                value_integer INTEGER,
                value_real REAL,
                value_text TEXT,
                value_blob BLOB,
                PRIMARY KEY (mutation_id, field_id),
                FOREIGN KEY (mutation_id) REFERENCES _synchro_pending_changes(mutation_id)
            ) WITHOUT ROWID;
            CREATE TABLE IF NOT EXISTS _synchro_push_batch_members (
                batch_id TEXT NOT NULL,
                mutation_id TEXT NOT NULL,
                ordinal INTEGER NOT NULL,
                PRIMARY KEY (batch_id, mutation_id),
                UNIQUE (batch_id, ordinal)
            ) WITHOUT ROWID;
            CREATE TABLE IF NOT EXISTS _synchro_schema_archive (
                schema_version INTEGER NOT NULL,
                schema_hash TEXT NOT NULL,
                schema_json TEXT NOT NULL,
                created_at TEXT NOT NULL,
                PRIMARY KEY (schema_version, schema_hash)
            ) WITHOUT ROWID;
            """)
        if try db.tableExists("_synchro_rejected_mutations") {
            let columns = try columnNames(of: "_synchro_rejected_mutations", on: db)
            if !columns.contains("mutation_json") {
                try db.execute("ALTER TABLE _synchro_rejected_mutations ADD COLUMN mutation_json TEXT")
            }
            if !columns.contains("rejected_json") {
                try db.execute("ALTER TABLE _synchro_rejected_mutations ADD COLUMN rejected_json TEXT")
            }
        }
        try db.execute("""
            CREATE INDEX IF NOT EXISTS idx_synchro_pending_changes_state_order
                ON _synchro_pending_changes (lifecycle_state, local_order);
            CREATE INDEX IF NOT EXISTS idx_synchro_pending_changes_row_order
                ON _synchro_pending_changes (table_id, table_name, record_id, local_order);
            CREATE INDEX IF NOT EXISTS idx_synchro_pending_changes_dependency
                ON _synchro_pending_changes (dependency_mutation_id, lifecycle_state);
            CREATE INDEX IF NOT EXISTS idx_synchro_pending_changes_batch
                ON _synchro_pending_changes (sealed_batch_id, sealed_ordinal);
            CREATE INDEX IF NOT EXISTS idx_synchro_mutation_values_field
                ON _synchro_mutation_values (field_id, mutation_id);
            """)
        for row in legacyRows {
            try importLegacy(row, into: db)
        }
        if let schema = try CaptureTriggerInstaller.verifiedStoredSchema(on: db) {
            try SchemaArchive.archive(
                version: schema.version, hash: schema.hash, tables: schema.tables, createdAt: clock.timestamp(), on: db)
            try CaptureTriggerInstaller.install(schema.tables, on: db)
        }
    }

    static func v10(_ db: Connection) throws {
        try db.execute("""
            CREATE TABLE IF NOT EXISTS _synchro_rebuild_page_receipts (
                scope_id TEXT NOT NULL,
                rebuild_id TEXT NOT NULL,
                request_cursor_is_null INTEGER NOT NULL CHECK (request_cursor_is_null IN (0, 1)),
                request_cursor TEXT NOT NULL,
                request_json TEXT NOT NULL,
                response_json TEXT NOT NULL,
                is_final INTEGER NOT NULL CHECK (is_final IN (0, 1)),
                final_scope_cursor TEXT,
                final_checksum TEXT,
                PRIMARY KEY (scope_id, rebuild_id, request_cursor_is_null, request_cursor),
                CHECK (
                    (is_final = 0 AND final_scope_cursor IS NULL AND final_checksum IS NULL) OR
                    (is_final = 1 AND final_scope_cursor IS NOT NULL AND final_checksum IS NOT NULL)
                )
            );
            """)
    }

    static func v11(_ db: Connection) throws {
        try db.execute("""
            CREATE TABLE IF NOT EXISTS _synchro_backoff (
                singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
                resume_state TEXT NOT NULL CHECK (resume_state IN ('connecting', 'pushing', 'pulling', 'rebuilding')),
                work_identity TEXT NOT NULL,
                retry_classification TEXT NOT NULL CHECK (retry_classification IN ('network', 'http_429', 'http_503')),
                attempt_count INTEGER NOT NULL CHECK (attempt_count > 0),
                next_retry_at_ms INTEGER NOT NULL
            );
            """)
    }

    static func v12(_ db: Connection) throws {
        try db.execute("""
            CREATE TABLE IF NOT EXISTS _synchro_blocking_error (
                singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
                operation TEXT NOT NULL,
                code TEXT NOT NULL,
                retryable INTEGER NOT NULL CHECK (retryable IN (0, 1)),
                message TEXT NOT NULL,
                recovery_action TEXT NOT NULL CHECK (recovery_action IN ('retry', 'schema_reset', 'none')),
                metadata_json TEXT NOT NULL,
                created_at TEXT NOT NULL
            );
            CREATE TABLE IF NOT EXISTS _synchro_schema_migration (
                singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
                journal_version INTEGER NOT NULL,
                source_schema_version INTEGER NOT NULL,
                source_schema_hash TEXT NOT NULL,
                target_schema_version INTEGER NOT NULL,
                target_schema_hash TEXT NOT NULL,
                target_manifest_json TEXT NOT NULL,
                action TEXT NOT NULL CHECK (action IN ('replace', 'rebuild_local')),
                affected_scopes_json TEXT NOT NULL,
                scope_cursor_updates_json TEXT NOT NULL,
                migration_plan_version INTEGER NOT NULL,
                migration_plan_json TEXT NOT NULL,
                migration_plan_hash TEXT NOT NULL,
                phase TEXT NOT NULL CHECK (phase IN ('prepared', 'applied')),
                is_schema_reset INTEGER NOT NULL CHECK (is_schema_reset IN (0, 1))
            );
            """)
    }

    /// Rebuilds the scope tables with TEXT checksum columns, keeping every row (seed scope state survives).
    ///
    /// `_synchro_scope_rows` is copied only when it is not already exactly the table the copy would produce
    /// (``ScopeRowsV13Shape``): a seed's edge table has v13's definition and TEXT checksums, and copying its
    /// hundred thousand edges into an identical table, dropping (and, with `secure_delete`, zeroing) the old one and
    /// indexing the new one was most of the migration's cost (`docs/decisions.md`).
    ///
    /// The renames run in legacy mode: the capture triggers installed by v9 already name tables that only v14
    /// creates, and SQLite (3.26+) re-checks every trigger on a modern RENAME, which would fail. No trigger or
    /// view names the scope tables, so legacy mode rewrites nothing the modern mode would have.
    static func v13(_ db: Connection) throws {
        let edges = try ScopeRowsV13Shape.verdict(on: db)
        try db.execute("PRAGMA legacy_alter_table = ON")
        defer { try? db.execute("PRAGMA legacy_alter_table = OFF") }
        switch edges {
        case .rebuild:
            try db.execute("""
                \(scopesV13DDL);
                INSERT INTO _synchro_scopes_v13 (scope_id, cursor, checksum, generation, local_checksum)
                    SELECT scope_id, cursor, CAST(checksum AS TEXT), generation, CAST(local_checksum AS TEXT)
                    FROM _synchro_scopes;
                CREATE TABLE _synchro_scope_rows_v13 (
                    scope_id TEXT NOT NULL,
                    table_name TEXT NOT NULL,
                    record_id TEXT NOT NULL,
                    checksum TEXT NOT NULL,
                    generation INTEGER NOT NULL DEFAULT 0,
                    PRIMARY KEY (scope_id, table_name, record_id)
                );
                INSERT INTO _synchro_scope_rows_v13 (scope_id, table_name, record_id, checksum, generation)
                    SELECT scope_id, table_name, record_id, CAST(checksum AS TEXT), generation
                    FROM _synchro_scope_rows;
                DROP TABLE _synchro_scope_rows;
                DROP TABLE _synchro_scopes;
                ALTER TABLE _synchro_scopes_v13 RENAME TO _synchro_scopes;
                ALTER TABLE _synchro_scope_rows_v13 RENAME TO _synchro_scope_rows;
                CREATE INDEX idx_synchro_scope_rows_record ON _synchro_scope_rows (table_name, record_id);
                """)
        case .keep(let createIndex):
            try db.execute("""
                \(scopesV13DDL);
                INSERT INTO _synchro_scopes_v13 (scope_id, cursor, checksum, generation, local_checksum)
                    SELECT scope_id, cursor, CAST(checksum AS TEXT), generation, CAST(local_checksum AS TEXT)
                    FROM _synchro_scopes;
                DROP TABLE _synchro_scopes;
                ALTER TABLE _synchro_scopes_v13 RENAME TO _synchro_scopes;
                """)
            try forgetStatistics(of: ScopeRowsV13Shape.table, db)
            if createIndex {
                try db.execute(
                    "CREATE INDEX idx_synchro_scope_rows_record ON _synchro_scope_rows (table_name, record_id)")
            }
        }
    }

    private static let scopesV13DDL = """
        CREATE TABLE _synchro_scopes_v13 (
            scope_id TEXT PRIMARY KEY,
            cursor TEXT,
            checksum TEXT,
            generation INTEGER NOT NULL DEFAULT 0,
            local_checksum TEXT NOT NULL DEFAULT ''
        )
        """

    /// Deletes the `ANALYZE` statistics of `table` and its indexes, as dropping it would have: the kept table then
    /// plans like the rebuilt one, which has none.
    private static func forgetStatistics(of table: String, _ db: Connection) throws {
        for statistics in ["sqlite_stat1", "sqlite_stat4"] where try db.tableExists(statistics) {
            try db.run("DELETE FROM \(statistics) WHERE tbl = ?1", [.text(table)])
        }
    }

    static func v14(_ db: Connection) throws {
        try db.execute("""
            CREATE TABLE IF NOT EXISTS _synchro_capture_context (
                statement_token TEXT NOT NULL,
                table_name TEXT NOT NULL,
                operation TEXT NOT NULL CHECK (operation IN ('insert', 'update', 'delete')),
                PRIMARY KEY (statement_token, table_name)
            ) WITHOUT ROWID;
            CREATE TABLE IF NOT EXISTS _synchro_capture_fields (
                statement_token TEXT NOT NULL,
                table_name TEXT NOT NULL,
                column_name TEXT NOT NULL,
                PRIMARY KEY (statement_token, table_name, column_name)
            ) WITHOUT ROWID;
            """)
        if let schema = try CaptureTriggerInstaller.verifiedStoredSchema(on: db) {
            try CaptureTriggerInstaller.install(schema.tables, on: db)
        }
    }

    static func v15(_ db: Connection) throws {
        guard try db.tableExists("_synchro_pending_changes") else { return }
        try db.execute("""
            CREATE INDEX IF NOT EXISTS idx_synchro_pending_protocol_row_order
                ON _synchro_pending_changes (table_id, pk_field_id, pk_logical_type, record_id, local_order);
            """)
    }

    /// A file that predates v9's final DDL receives `atomic_group_id` here, so its physical column order
    /// differs from a new file's; every access is by column name.
    static func v18AtomicGroups(_ db: Connection) throws {
        if try db.tableExists("_synchro_pending_changes") {
            let columns = try columnNames(of: "_synchro_pending_changes", on: db)
            if !columns.contains("atomic_group_id") {
                try db.execute("ALTER TABLE _synchro_pending_changes ADD COLUMN atomic_group_id TEXT")
            }
            if columns.contains("normalized_mutation_id") {
                try db.execute("""
                    CREATE INDEX IF NOT EXISTS idx_synchro_pending_changes_normalized
                        ON _synchro_pending_changes (normalized_mutation_id);
                    """)
            }
        }
        try CaptureTriggerInstaller.regenerate(on: db)
    }

    static let ledgerDDL = """
        CREATE TABLE IF NOT EXISTS _synchro_pending_changes (
            local_order INTEGER PRIMARY KEY AUTOINCREMENT,
            mutation_id TEXT NOT NULL UNIQUE,
            capture_uuid TEXT,
            table_id TEXT,
            table_name TEXT NOT NULL,
            record_id TEXT NOT NULL,
            pk_field_id TEXT,
            pk_logical_type TEXT,
            operation TEXT NOT NULL CHECK (operation IN ('insert', 'update', 'delete')),
            authored_schema_version INTEGER,
            authored_schema_hash TEXT,
            base_version TEXT,
            client_version TEXT NOT NULL,
            lifecycle_state TEXT NOT NULL,
            source_kind TEXT NOT NULL,
            dependency_mutation_id TEXT,
            normalized_mutation_id TEXT,
            sealed_batch_id TEXT,
            sealed_ordinal INTEGER,
            atomic_group_id TEXT,
            accepted_json TEXT,
            rejected_json TEXT,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL
        )
        """

    private static func readLegacyQueue(_ db: Connection) throws -> [LegacyQueueRow] {
        guard try db.tableExists("_synchro_pending_changes") else { return [] }
        let rows = try db.query("""
            SELECT record_id, table_name, operation, base_updated_at, client_updated_at, local_revision
            FROM _synchro_pending_changes ORDER BY client_updated_at, table_name, record_id
            """) { row in
            LegacyQueueRow(
                recordID: try row.text(at: 0), tableName: try row.text(at: 1), operation: try row.text(at: 2),
                baseVersion: row.isNull(at: 3) ? nil : try row.text(at: 3), clientVersion: try row.text(at: 4),
                localRevision: row.int64(at: 5))
        }
        try db.execute("DROP TABLE _synchro_pending_changes")
        return rows
    }

    private static func importLegacy(_ row: LegacyQueueRow, into db: Connection) throws {
        let mutationID = LegacyMutationID.make(
            tableName: row.tableName, recordID: row.recordID, legacyOperation: row.operation,
            clientVersion: row.clientVersion, localRevision: row.localRevision)
        let operation = switch row.operation {
        case "create": "insert"
        case "delete": "delete"
        default: "update"
        }
        try db.run("""
            INSERT OR IGNORE INTO _synchro_pending_changes
                (mutation_id, capture_uuid, table_id, table_name, record_id, operation, base_version, client_version,
                 lifecycle_state, source_kind, created_at, updated_at)
            VALUES (?, ?, NULL, ?, ?, ?, ?, ?, 'legacy_blocked', 'legacy_import', ?, ?)
            """, [
            .text(mutationID), .text(mutationID), .text(row.tableName), .text(row.recordID), .text(operation),
            row.baseVersion.map(SQLiteValue.text) ?? .null, .text(row.clientVersion), .text(row.clientVersion),
            .text(row.clientVersion),
        ])
    }
}
