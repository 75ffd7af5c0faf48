import SQLiteKit
import Testing

@Suite("Authorizer")
struct AuthorizerTests {
    @Test("the authorizer sees an INSERT into a named table and can deny it with SQLITE_AUTH before it runs")
    func denyInsertIntoNamedTable() throws {
        try withDatabase { db, _ in
            try db.execute("CREATE TABLE _synchro_meta(key, value); CREATE TABLE notes(body);")
            var requests: [AuthorizationRequest] = []
            try db.setAuthorizer { request in
                requests.append(request)
                if case .insert(let table) = request.action, table.lowercased().hasPrefix("_synchro_") {
                    return .deny
                }
                return .allow
            }
            let error = try #require(throws: SQLiteError.self) {
                try db.prepare("INSERT INTO _SYNCHRO_META(key, value) VALUES ('k', 'v')")
            }
            #expect(error.code == .authorization)
            #expect(error.message == "not authorized")
            #expect(requests.contains(AuthorizationRequest(
                action: .insert(table: "_synchro_meta"), database: "main", accessor: nil)))
            try db.run("INSERT INTO notes(body) VALUES ('allowed')")
            try db.setAuthorizer(nil)
            try db.run("INSERT INTO _synchro_meta(key, value) VALUES ('k', 'v')")
            #expect(try db.scalar("SELECT count(*) FROM _synchro_meta") == .integer(1))
        }
    }

    @Test("DDL on a protected table is denied and the table is untouched", arguments: [
        "DROP TABLE notes",
        "ALTER TABLE notes ADD COLUMN extra",
        "CREATE INDEX notes_body ON notes(body)",
        "CREATE TRIGGER notes_t AFTER INSERT ON notes BEGIN SELECT 1; END",
        "DROP TRIGGER _synchro_cdc_insert_notes",
    ])
    func denyDDL(sql: String) throws {
        try withDatabase { db, _ in
            try db.execute("""
                CREATE TABLE notes(body);
                CREATE TABLE log(entry);
                CREATE TRIGGER _synchro_cdc_insert_notes AFTER INSERT ON notes BEGIN
                    INSERT INTO log(entry) VALUES (NEW.body);
                END;
                """)
            try db.setAuthorizer { request in
                switch request.action {
                case .dropTable(let table, _), .alterTable(_, let table), .createIndex(_, let table, _),
                     .createTrigger(_, let table, _), .dropTrigger(_, let table, _):
                    table == "notes" ? .deny : .allow
                default:
                    .allow
                }
            }
            let error = try #require(throws: SQLiteError.self) { try db.execute(sql) }
            #expect(error.code == .authorization)
            try db.setAuthorizer(nil)
            #expect(try db.columns(of: "notes").map(\.name) == ["body"])
            let objects = try db.query("SELECT name FROM sqlite_schema ORDER BY name") { try $0.text(at: 0) }
            #expect(objects == ["_synchro_cdc_insert_notes", "log", "notes"])
        }
    }

    @Test("each statement kind reaches the authorizer as its action", arguments: [
        ("SELECT body FROM notes", AuthorizerAction.read(table: "notes", column: "body")),
        ("SELECT body FROM notes", .select),
        ("UPDATE notes SET body = 'x'", .update(table: "notes", column: "body")),
        ("DELETE FROM notes", .delete(table: "notes")),
        ("BEGIN", .transaction(operation: "BEGIN")),
        ("COMMIT", .transaction(operation: "COMMIT")),
        ("END", .transaction(operation: "COMMIT")),
        ("ROLLBACK", .transaction(operation: "ROLLBACK")),
        ("SAVEPOINT sp", .savepoint(operation: "BEGIN", name: "sp")),
        ("RELEASE sp", .savepoint(operation: "RELEASE", name: "sp")),
        ("ROLLBACK TO sp", .savepoint(operation: "ROLLBACK", name: "sp")),
        ("PRAGMA user_version = 3", .pragma(name: "user_version", argument: "3")),
        ("PRAGMA table_info(notes)", .pragma(name: "table_info", argument: "notes")),
        ("PRAGMA user_version", .pragma(name: "user_version", argument: nil)),
        ("SELECT abs(-1)", .function(name: "abs")),
        ("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3) SELECT x FROM c", .recursive),
        ("ATTACH ':memory:' AS other", .attach(file: ":memory:")),
        ("DETACH other", .detach(database: "other")),
        ("CREATE TEMP TABLE scratch(x)", .createTable(table: "scratch", temporary: true)),
        ("CREATE VIEW v AS SELECT 1", .createView(view: "v", temporary: false)),
        ("DROP VIEW existing_view", .dropView(view: "existing_view", temporary: false)),
        ("DROP INDEX notes_body", .dropIndex(index: "notes_body", table: "notes", temporary: false)),
        ("REINDEX notes_body", .reindex(index: "notes_body")),
        ("ANALYZE notes", .analyze(table: "notes")),
    ])
    func actionsReported(sql: String, expected: AuthorizerAction) throws {
        try withDatabase { db, _ in
            try db.execute("""
                CREATE TABLE notes(body); CREATE INDEX notes_body ON notes(body);
                CREATE VIEW existing_view AS SELECT 1;
                """)
            var actions: [AuthorizerAction] = []
            try db.setAuthorizer { request in
                actions.append(request.action)
                return .allow
            }
            _ = try db.prepare(sql)
            #expect(actions.contains(expected), "\(actions)")
        }
    }

    @Test("writes made by a trigger reach the authorizer with the trigger as accessor")
    func triggerAccessor() throws {
        try withDatabase { db, _ in
            try db.execute("""
                CREATE TABLE notes(body);
                CREATE TABLE _synchro_pending_changes(entry);
                CREATE TRIGGER _synchro_cdc_insert_notes AFTER INSERT ON notes BEGIN
                    INSERT INTO _synchro_pending_changes(entry) VALUES (NEW.body);
                END;
                """)
            var accessors: [String?] = []
            try db.setAuthorizer { request in
                guard case .insert(let table) = request.action, table == "_synchro_pending_changes" else {
                    return .allow
                }
                accessors.append(request.accessor)
                return request.accessor == "_synchro_cdc_insert_notes" ? .allow : .deny
            }
            try db.run("INSERT INTO notes(body) VALUES ('captured')")
            #expect(accessors == ["_synchro_cdc_insert_notes"])
            #expect(throws: SQLiteError.self) { try db.run("INSERT INTO _synchro_pending_changes(entry) VALUES (1)") }
            #expect(try db.scalar("SELECT count(*) FROM _synchro_pending_changes") == .integer(1))
        }
    }

    @Test("ignoring a column read makes it read as NULL")
    func ignoreRead() throws {
        try withDatabase { db, _ in
            try db.execute("CREATE TABLE users(name, token); INSERT INTO users VALUES ('ann', 'hidden');")
            try db.setAuthorizer { request in
                request.action == .read(table: "users", column: "token") ? .ignore : .allow
            }
            #expect(try db.rows("SELECT name, token FROM users") == [["ann", .null]])
        }
    }

    @Test("installing an authorizer re-authorizes cached statements on their next run")
    func cachedStatementsReauthorized() throws {
        try withDatabase { db, _ in
            try db.execute("CREATE TABLE notes(body)")
            let insert = try db.cachedStatement("INSERT INTO notes(body) VALUES (?)")
            try insert.run("before")
            try db.setAuthorizer { request in
                if case .insert = request.action { .deny } else { .allow }
            }
            let error = try #require(throws: SQLiteError.self) {
                try db.cachedStatement("INSERT INTO notes(body) VALUES (?)").run("after")
            }
            #expect(error.code == .authorization)
            #expect(try db.scalar("SELECT count(*) FROM notes") == .integer(1))
        }
    }
}
