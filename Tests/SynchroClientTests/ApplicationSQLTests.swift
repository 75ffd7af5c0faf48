import Foundation
import SQLiteKit
import SynchroClient
import Testing
import SynchroStore

@Suite("Application SQL")
struct ApplicationSQLTests {
    /// A demo store with a local-only table and one seeded synced row.
    static func fixture() throws -> StoreFixture {
        let fixture = try StoreFixture()
        try fixture.store.execute("CREATE TABLE drafts (id INTEGER PRIMARY KEY, body TEXT UNIQUE)")
        try fixture.store.serverApply { transaction in
            try transaction.execute(taskInsertSQL("t1", title: "T", position: 1))
        }
        return fixture
    }

    static let insertTask = taskInsertSQL("x", title: "t", position: 1)

    @Test("execute refuses each forbidden form with the typed error of its rule and changes nothing", arguments: [
        ("", ApplicationSQLError.emptyStatement),
        ("  -- only a comment", .emptyStatement),
        (";", .emptyStatement),
        ("UPDATE tasks SET title = 'a'; DELETE FROM tasks", .multipleStatements),
        ("SELECT 'unterminated", .invalidSQL),
        ("BEGIN", .transactionControl(keyword: "BEGIN")),
        ("BEGIN IMMEDIATE TRANSACTION", .transactionControl(keyword: "BEGIN")),
        ("COMMIT", .transactionControl(keyword: "COMMIT")),
        ("END", .transactionControl(keyword: "END")),
        ("ROLLBACK", .transactionControl(keyword: "ROLLBACK")),
        ("SAVEPOINT sp", .transactionControl(keyword: "SAVEPOINT")),
        ("RELEASE sp", .transactionControl(keyword: "RELEASE")),
        ("ROLLBACK TO sp", .transactionControl(keyword: "ROLLBACK")),
        ("INSERT OR REPLACE INTO tasks (id, owner_id, title, done, position) VALUES ('t1', 'u', 'x', 0, 1)",
         .conflictClause("OR REPLACE")),
        ("INSERT OR IGNORE INTO drafts (body) VALUES ('a')", .conflictClause("OR IGNORE")),
        ("REPLACE INTO tasks (id, owner_id, title, done, position) VALUES ('t1', 'u', 'x', 0, 1)",
         .conflictClause("REPLACE")),
        ("UPDATE OR ROLLBACK tasks SET title = 'x'", .conflictClause("OR ROLLBACK")),
        ("WITH v AS (SELECT 1) INSERT OR ABORT INTO drafts (body) VALUES ('a')", .conflictClause("OR ABORT")),
        (insertTask + " ON CONFLICT (id) DO UPDATE SET title = excluded.title", .upsertOnSyncedTable(table: "tasks")),
        ("INSERT INTO main.Tasks (id, owner_id, title, done, position) VALUES ('t1', 'u', 'x', 0, 1) "
            + "ON CONFLICT DO NOTHING", .upsertOnSyncedTable(table: "tasks")),
        ("SELECT * FROM tasks", .readInExecute),
        ("WITH t AS (SELECT 1) SELECT * FROM t", .readInExecute),
        ("INSERT INTO _synchro_meta (key, value) VALUES ('x', 'y')", .reservedTableWrite(table: "_synchro_meta")),
        ("UPDATE _synchro_meta SET value = '1' WHERE key = 'sync_lock'", .reservedTableWrite(table: "_synchro_meta")),
        ("UPDATE _synchro_pending_changes SET lifecycle_state = 'accepted'",
         .reservedTableWrite(table: "_synchro_pending_changes")),
        ("DELETE FROM _SYNCHRO_MUTATION_VALUES", .reservedTableWrite(table: "_synchro_mutation_values")),
        ("DELETE FROM grdb_migrations", .reservedTableWrite(table: "grdb_migrations")),
        ("WITH v AS (SELECT 1) DELETE FROM _synchro_row_versions",
         .reservedTableWrite(table: "_synchro_row_versions")),
        ("INSERT INTO _synchro_capture_context VALUES ('t', 'tasks', 'insert')",
         .reservedTableWrite(table: "_synchro_capture_context")),
        ("DROP TABLE tasks", .syncedTableDDL(table: "tasks")),
        ("ALTER TABLE tasks ADD COLUMN extra TEXT", .syncedTableDDL(table: "tasks")),
        ("ALTER TABLE tasks RENAME TO chores", .syncedTableDDL(table: "tasks")),
        ("CREATE INDEX tasks_title ON tasks (title)", .syncedTableDDL(table: "tasks")),
        ("DROP INDEX products_sku", .syncedTableDDL(table: "products")),
        ("CREATE TRIGGER audit AFTER INSERT ON tasks BEGIN SELECT 1; END", .syncedTableDDL(table: "tasks")),
        ("DROP TRIGGER _synchro_cdc_insert_tasks", .reservedObjectDDL(name: "_synchro_cdc_insert_tasks")),
        ("DROP TABLE _synchro_meta", .reservedObjectDDL(name: "_synchro_meta")),
        ("CREATE TABLE _synchro_extra (x)", .reservedObjectDDL(name: "_synchro_extra")),
        ("ATTACH DATABASE ':memory:' AS other", .attachDetach),
        ("PRAGMA user_version = 7", .pragmaWithArgument(pragma: "user_version")),
        ("PRAGMA writable_schema = ON", .pragmaWithArgument(pragma: "writable_schema")),
        ("PRAGMA journal_mode = DELETE", .pragmaWithArgument(pragma: "journal_mode")),
    ])
    func refusedWrites(sql: String, expected: ApplicationSQLError) throws {
        let fixture = try Self.fixture()
        let before = try fixture.inspect(databaseFingerprint)
        let error = try #require(throws: ApplicationSQLError.self) { try fixture.store.execute(sql) }
        #expect(error == expected)
        #expect(try fixture.inspect(databaseFingerprint) == before)
    }

    @Test("query refuses writes (RETURNING too), transaction control and several statements", arguments: [
        ("DELETE FROM tasks RETURNING id", ApplicationSQLError.writeInQuery),
        (insertTask + " RETURNING id", .writeInQuery),
        ("CREATE TABLE scratch (x)", .writeInQuery),
        ("BEGIN", .transactionControl(keyword: "BEGIN")),
        ("SELECT 1; SELECT 2", .multipleStatements),
        ("UPDATE _synchro_meta SET value = '1'", .reservedTableWrite(table: "_synchro_meta")),
        ("PRAGMA foreign_keys = OFF", .pragmaWithArgument(pragma: "foreign_keys")),
    ])
    func refusedQueries(sql: String, expected: ApplicationSQLError) throws {
        let fixture = try Self.fixture()
        let before = try fixture.inspect(databaseFingerprint)
        let error = try #require(throws: ApplicationSQLError.self) { try fixture.store.query(sql) }
        #expect(error == expected)
        #expect(try fixture.inspect(databaseFingerprint) == before)
    }

    @Test("the same refusals apply inside a transaction, which then rolls back when the error propagates")
    func refusalInsideTransaction() throws {
        let fixture = try Self.fixture()
        let before = try fixture.inspect(databaseFingerprint)
        let error = try #require(throws: ApplicationSQLError.self) {
            try fixture.store.transaction { transaction in
                try transaction.execute(Self.insertTask)
                try transaction.execute("SAVEPOINT inner")
            }
        }
        #expect(error == .transactionControl(keyword: "SAVEPOINT"))
        #expect(try fixture.inspect(databaseFingerprint) == before)
    }

    @Test("reads, inspection pragmas, local-only DDL and local upserts are accepted", arguments: [
        "SELECT id, title FROM tasks",
        "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 3) SELECT x FROM n",
        "SELECT value FROM _synchro_meta WHERE key = 'schema_version'",
        "PRAGMA table_info(tasks)",
        "PRAGMA foreign_keys",
        "VALUES (1), (2)",
    ])
    func acceptedQueries(sql: String) throws {
        let fixture = try Self.fixture()
        _ = try fixture.store.query(sql)
    }

    @Test("local-only writes and DDL run without capture", arguments: [
        "INSERT INTO drafts (body) VALUES ('a') ON CONFLICT (body) DO NOTHING",
        "CREATE INDEX drafts_body ON drafts (body)",
        "CREATE TABLE scratch (x)",
        "CREATE TRIGGER drafts_audit AFTER INSERT ON drafts BEGIN SELECT 1; SELECT 2; END",
        "DELETE FROM drafts",
    ])
    func acceptedLocalWrites(sql: String) throws {
        let fixture = try Self.fixture()
        try fixture.store.execute(sql)
        #expect(try fixture.store.ledger().isEmpty)
    }

    @Test("a local table's trigger cannot write Synchro tables: the statement that fires it is refused")
    func localTriggerCannotWriteMetadata() throws {
        let fixture = try Self.fixture()
        try fixture.store.execute("CREATE TABLE log (entry TEXT)")
        try fixture.store.execute("""
            CREATE TRIGGER log_disables_capture AFTER INSERT ON log BEGIN
                UPDATE _synchro_meta SET value = '1' WHERE key = 'sync_lock';
            END
            """)
        let before = try fixture.inspect(databaseFingerprint)
        let error = try #require(throws: ApplicationSQLError.self) {
            try fixture.store.execute("INSERT INTO log VALUES ('x')")
        }
        #expect(error == .reservedTableWrite(table: "_synchro_meta"))
        #expect(try fixture.inspect(databaseFingerprint) == before)
        #expect(try fixture.store.meta(.syncLock) == "0")
    }

    @Test("statement arguments bind by position and rows come back typed")
    func typedRows() throws {
        let fixture = try Self.fixture()
        try fixture.store.execute("INSERT INTO drafts (id, body) VALUES (?, ?)", [5, .null])
        let rows = try fixture.store.query("SELECT id, body, x'00ff' AS raw, 1.5 AS real FROM drafts WHERE id = ?", [5])
        #expect(rows == [Row(columns: ["id", "body", "raw", "real"], values: [5, .null, .blob([0, 255]), 1.5])])
        #expect(rows.first?["raw"] == .blob([0, 255]))
    }

    @Test("a schema-qualified INSERT after a WITH clause is still captured with its column list")
    func qualifiedInsertIsCaptured() throws {
        let fixture = try Self.fixture()
        try fixture.store.execute("""
            WITH v(t) AS (SELECT 'Named') INSERT INTO "main"."TASKS" ("id", owner_id, title, done, position)
            SELECT 'q1', 'u', t, 1, 2 FROM v
            """)
        let entry = try #require(try fixture.store.ledger().first)
        #expect(entry.fields.map(\.fieldID) == allTaskInsertFields)
    }

    @Test("a transaction commits every statement and its capture together")
    func transactionCommits() throws {
        let fixture = try Self.fixture()
        let count = try fixture.store.transaction { transaction in
            try transaction.execute(Self.insertTask)
            try transaction.execute("UPDATE tasks SET title = 'u' WHERE id = 't1'")
            return try transaction.query("SELECT count(*) AS n FROM tasks").first?["n"]
        }
        #expect(count == .integer(2))
        #expect(try fixture.ledgerSummary() == ["insert tasks/x unsealed", "update tasks/t1 unsealed"])
    }

    @Test("a transaction whose callback throws leaves no row and no queue entry")
    func transactionRollsBack() throws {
        struct Stop: Error {}
        let fixture = try Self.fixture()
        let before = try fixture.inspect(databaseFingerprint)
        #expect(throws: Stop.self) {
            try fixture.store.transaction { transaction in
                try transaction.execute(Self.insertTask)
                throw Stop()
            }
        }
        #expect(try fixture.inspect(databaseFingerprint) == before)
    }

    @Test("a statement error the callback swallows leaves no context behind, so the rest commits")
    func swallowedError() throws {
        let fixture = try Self.fixture()
        try fixture.store.transaction { transaction in
            #expect(throws: ApplicationSQLError.self) {
                try transaction.execute(taskInsertSQL("t1", title: "dup", position: 1))
            }
            try transaction.execute(Self.insertTask)
        }
        #expect(try fixture.ledgerSummary() == ["insert tasks/x unsealed"])
        #expect(try fixture.inspect { try $0.scalar("SELECT count(*) FROM _synchro_capture_fields") } == .integer(0))
    }

    @Test("a managed write that finds capture context at commit fails and rolls back")
    func residualContext() throws {
        let fixture = try Self.fixture()
        try fixture.inspect { try $0.run("INSERT INTO _synchro_capture_context VALUES ('stale', 'tasks', 'update')") }
        let before = try fixture.inspect(databaseFingerprint)
        let error = try #require(throws: ApplicationSQLError.self) { try fixture.store.execute(Self.insertTask) }
        #expect(error == .captureContextRemains)
        #expect(try fixture.inspect(databaseFingerprint) == before)
    }

    @Test("calls made from inside a transaction callback are refused instead of deadlocking")
    func reentrantCalls() throws {
        let fixture = try Self.fixture()
        let store = fixture.store
        try store.transaction { _ in
            #expect(throws: ApplicationSQLError.nestedTransaction) { try store.execute(Self.insertTask) }
            #expect(throws: ApplicationSQLError.nestedTransaction) { try store.query("SELECT 1") }
            #expect(throws: ApplicationSQLError.nestedTransaction) { try store.transaction { _ in 1 } }
            #expect(throws: ClientStoreError.calledInsideApplicationTransaction) { try store.ledger() }
        }
    }

    @Test("a transaction handle used after its callback returned is refused")
    func escapedHandle() throws {
        let fixture = try Self.fixture()
        nonisolated(unsafe) var escaped: ApplicationTransaction?
        try fixture.store.transaction { escaped = $0 }
        #expect(throws: ApplicationSQLError.transactionEnded) { try escaped?.execute(Self.insertTask) }
    }

    @Test("a closed store refuses application SQL")
    func closedStore() throws {
        let fixture = try Self.fixture()
        fixture.store.close()
        #expect(throws: ApplicationSQLError.closed) { try fixture.store.query("SELECT 1") }
        #expect(throws: ClientStoreError.closed) { try fixture.store.ledger() }
    }
}
