import SQLiteKit

/// Steps v1 … v8: the pre-ledger layout that the protocol-3 seed interchange baseline records
/// (`spec/client-store.md` §2, `spec/seed-format.md` §2.2). On a new file they build the same intermediate
/// tables the upstream client builds, so the final layout (including physical column order) is upstream's.
enum LegacySteps {
    static func v1(_ db: Connection) throws {
        try db.execute("""
            CREATE TABLE IF NOT EXISTS _synchro_pending_changes (
                record_id TEXT NOT NULL,
                table_name TEXT NOT NULL,
                operation TEXT NOT NULL,
                base_updated_at TEXT,
                client_updated_at TEXT NOT NULL,
                local_revision INTEGER NOT NULL DEFAULT 0,
                PRIMARY KEY (table_name, record_id)
            );
            CREATE TABLE IF NOT EXISTS _synchro_meta (
                key TEXT PRIMARY KEY,
                value TEXT NOT NULL
            );
            INSERT OR IGNORE INTO _synchro_meta (key, value) VALUES ('sync_lock', '0');
            INSERT OR IGNORE INTO _synchro_meta (key, value) VALUES ('checkpoint', '0');
            """)
    }

    static func v2(_ db: Connection) throws {
        try db.execute("""
            CREATE TABLE IF NOT EXISTS _synchro_bucket_members (
                bucket_id TEXT NOT NULL,
                table_name TEXT NOT NULL,
                record_id TEXT NOT NULL,
                checksum INTEGER NOT NULL DEFAULT 0,
                PRIMARY KEY (bucket_id, table_name, record_id)
            );
            CREATE TABLE IF NOT EXISTS _synchro_bucket_checkpoints (
                bucket_id TEXT PRIMARY KEY,
                checkpoint INTEGER NOT NULL DEFAULT 0
            );
            """)
    }

    static func v3(_ db: Connection) throws {
        try db.execute("""
            CREATE TABLE IF NOT EXISTS _synchro_scopes (
                scope_id TEXT PRIMARY KEY,
                cursor TEXT,
                checksum TEXT,
                generation INTEGER NOT NULL DEFAULT 0,
                local_checksum INTEGER NOT NULL DEFAULT 0
            );
            CREATE TABLE IF NOT EXISTS _synchro_scope_rows (
                scope_id TEXT NOT NULL,
                table_name TEXT NOT NULL,
                record_id TEXT NOT NULL,
                checksum INTEGER NOT NULL DEFAULT 0,
                generation INTEGER NOT NULL DEFAULT 0,
                PRIMARY KEY (scope_id, table_name, record_id)
            );
            CREATE INDEX IF NOT EXISTS idx_synchro_scope_rows_record ON _synchro_scope_rows (table_name, record_id);
            """)
    }

    /// Wipes scope state: running it on a seed would discard its cursors, checksums and provenance, which is
    /// why seeds record v1 … v6 as applied.
    static func v4(_ db: Connection) throws {
        if try !columnNames(of: "_synchro_scopes", on: db).contains("local_checksum") {
            try db.execute("ALTER TABLE _synchro_scopes ADD COLUMN local_checksum INTEGER NOT NULL DEFAULT 0")
        }
        if try !columnNames(of: "_synchro_scope_rows", on: db).contains("checksum") {
            try db.execute("ALTER TABLE _synchro_scope_rows ADD COLUMN checksum INTEGER NOT NULL DEFAULT 0")
        }
        try db.execute("""
            UPDATE _synchro_scopes SET cursor = NULL, checksum = NULL, generation = 0, local_checksum = 0;
            DELETE FROM _synchro_scope_rows;
            """)
    }

    static func v5(_ db: Connection) throws {
        try db.execute(rejectedMutationsDDL)
    }

    static func v6(_ db: Connection) throws {
        try db.execute("""
            UPDATE _synchro_scopes SET cursor = NULL, checksum = NULL, generation = 0, local_checksum = '';
            DELETE FROM _synchro_scope_rows;
            DROP TABLE IF EXISTS _synchro_bucket_members;
            DROP TABLE IF EXISTS _synchro_bucket_checkpoints;
            CREATE TABLE IF NOT EXISTS _synchro_scopes (
                scope_id TEXT PRIMARY KEY,
                cursor TEXT,
                checksum TEXT,
                generation INTEGER NOT NULL DEFAULT 0,
                local_checksum TEXT NOT NULL DEFAULT ''
            );
            CREATE TABLE IF NOT EXISTS _synchro_scope_rows (
                scope_id TEXT NOT NULL,
                table_name TEXT NOT NULL,
                record_id TEXT NOT NULL,
                checksum TEXT NOT NULL,
                generation INTEGER NOT NULL DEFAULT 0,
                PRIMARY KEY (scope_id, table_name, record_id)
            );
            CREATE INDEX IF NOT EXISTS idx_synchro_scope_rows_record ON _synchro_scope_rows (table_name, record_id);
            """)
        try db.execute(rejectedMutationsDDL)
        try db.execute("""
            CREATE TABLE IF NOT EXISTS _synchro_row_versions (
                table_name TEXT NOT NULL,
                record_id TEXT NOT NULL,
                server_version TEXT NOT NULL,
                row_checksum TEXT,
                PRIMARY KEY (table_name, record_id)
            );
            CREATE TABLE IF NOT EXISTS _synchro_seed_receipts (
                scope_id TEXT PRIMARY KEY,
                receipt TEXT NOT NULL,
                schema_version INTEGER NOT NULL,
                schema_hash TEXT NOT NULL,
                cardinality INTEGER NOT NULL,
                checksum TEXT NOT NULL
            );
            CREATE TABLE IF NOT EXISTS _synchro_rebuild_attempts (
                scope_id TEXT PRIMARY KEY,
                rebuild_id TEXT NOT NULL,
                client_generation INTEGER NOT NULL,
                schema_version INTEGER NOT NULL,
                schema_hash TEXT NOT NULL,
                generation INTEGER NOT NULL,
                cursor TEXT,
                page_limit INTEGER NOT NULL
            );
            DELETE FROM _synchro_rebuild_attempts;
            """)
    }

    static func v7(_ db: Connection) throws {
        if try !columnNames(of: "_synchro_pending_changes", on: db).contains("local_revision") {
            try db.execute("ALTER TABLE _synchro_pending_changes ADD COLUMN local_revision INTEGER NOT NULL DEFAULT 0")
        }
    }

    static func v8(_ db: Connection) throws {
        try db.execute("""
            CREATE TABLE IF NOT EXISTS _synchro_push_batches (
                batch_id TEXT PRIMARY KEY,
                request_json TEXT NOT NULL,
                pending_json TEXT NOT NULL,
                schema_json TEXT NOT NULL,
                state TEXT NOT NULL,
                created_at TEXT NOT NULL,
                completed_at TEXT
            );
            """)
    }

    private static let rejectedMutationsDDL = """
        CREATE TABLE IF NOT EXISTS _synchro_rejected_mutations (
            mutation_id TEXT PRIMARY KEY,
            table_name TEXT NOT NULL,
            record_id TEXT NOT NULL,
            status TEXT NOT NULL,
            code TEXT NOT NULL,
            message TEXT,
            server_row_json TEXT,
            server_version TEXT,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL
        );
        CREATE INDEX IF NOT EXISTS idx_synchro_rejected_mutations_record
            ON _synchro_rejected_mutations (table_name, record_id);
        """
}
