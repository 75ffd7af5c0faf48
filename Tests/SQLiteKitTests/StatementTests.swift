import SQLiteKit
import Testing

@Suite("Statements")
struct StatementTests {
    @Test("prepare refuses a second statement with a typed error and runs none of it", arguments: [
        "SELECT 1; DROP TABLE t",
        "INSERT INTO t(v) VALUES (1); INSERT INTO t(v) VALUES (2)",
        "INSERT INTO t(v) VALUES (1);\nDROP TABLE t;",
        "SELECT 1 -- comment\n; SELECT 2",
        "SELECT 1; garbage that does not parse",
    ])
    func multipleStatementsRejected(sql: String) throws {
        try withDatabase { db, _ in
            try db.execute("CREATE TABLE t(v)")
            let error = try #require(throws: SQLiteError.self) { try db.prepare(sql) }
            #expect(error.reason == .multipleStatements)
            #expect(error.code == .misuse)
            #expect(try db.tableExists("t"))
            #expect(try db.scalar("SELECT count(*) FROM t") == .integer(0))
            #expect(throws: SQLiteError.self) { try db.run(sql) }
            #expect(throws: SQLiteError.self) { try db.cachedStatement(sql) }
        }
    }

    @Test("whitespace, comments and semicolons may follow the one statement", arguments: [
        "SELECT 1;", "SELECT 1 ;  ;\n", "SELECT 1; -- trailing comment", "SELECT 1 /* block */ ;",
        "SELECT 1; /* unterminated block comment", "SELECT 1\t\r\n",
    ])
    func ignorableTailsAccepted(sql: String) throws {
        let value = try withDatabase { db, _ in try db.scalar(sql) }
        #expect(value == .integer(1))
    }

    @Test("SQL without a statement or with a NUL character is refused with a typed error")
    func emptyAndNULRejected() throws {
        try withDatabase { db, _ in
            for sql in ["", "   ", ";", "-- only a comment", "/* only */ ;"] {
                let error = try #require(throws: SQLiteError.self) { try db.prepare(sql) }
                #expect(error.reason == .emptyStatement, "\(sql)")
            }
            let error = try #require(throws: SQLiteError.self) { try db.prepare("SELECT 1\u{0}; DROP TABLE x") }
            #expect(error.reason == .sqlContainsNUL)
            #expect(throws: SQLiteError.self) { try db.execute("CREATE TABLE a(x);\u{0}CREATE TABLE b(x)") }
            #expect(try !db.tableExists("a"))
        }
    }

    @Test("execute runs every statement of a script and stops at the first failure")
    func executeRunsScripts() throws {
        try withDatabase { db, _ in
            try db.execute("""
                CREATE TABLE a(x); -- first
                INSERT INTO a VALUES (1);
                SELECT * FROM a;
                /* trailing comment */
                """)
            #expect(try db.scalar("SELECT count(*) FROM a") == .integer(1))
            let error = try #require(throws: SQLiteError.self) {
                try db.execute("INSERT INTO a VALUES (2); INSERT INTO missing VALUES (3); INSERT INTO a VALUES (4)")
            }
            #expect(error.message == "no such table: missing")
            #expect(try db.scalar("SELECT count(*) FROM a") == .integer(2))
        }
    }

    @Test("parameters bind by index and by name with :, @ and $ prefixes")
    func bindByName() throws {
        try withDatabase { db, _ in
            let statement = try db.prepare("SELECT :a, @b, $c, :a")
            #expect(statement.parameterCount == 3)
            #expect(statement.parameterName(at: 1) == ":a")
            #expect(statement.parameterIndex(named: "@b") == 2)
            #expect(statement.parameterIndex(named: "b") == nil)
            try statement.bind(.text("x"), named: "a")
            try statement.bind(.integer(2), named: "@b")
            try statement.bind(.blob([0, 1]), named: "c")
            #expect(try statement.step())
            #expect(try statement.values() == [.text("x"), .integer(2), .blob([0, 1]), .text("x")])
            try statement.bind(named: ["a": 1, "$c": 3, "b": .null])
            #expect(try statement.step())
            #expect(try statement.values() == [1, .null, 3, 1])
            let error = try #require(throws: SQLiteError.self) { try statement.bind(.null, named: "missing") }
            #expect(error.reason == .unknownParameterName("missing"))
            let wrongPrefix = try #require(throws: SQLiteError.self) { try statement.bind(.null, named: ":b") }
            #expect(wrongPrefix.reason == .unknownParameterName(":b"))
        }
    }

    @Test("binding the wrong number of values is a typed error naming both counts")
    func argumentCountMismatch() throws {
        try withDatabase { db, _ in
            let statement = try db.prepare("SELECT ?, ?")
            let tooFew = try #require(throws: SQLiteError.self) { try statement.bind([1]) }
            #expect(tooFew.reason == .argumentCountMismatch(expected: 2, actual: 1))
            let tooMany = try #require(throws: SQLiteError.self) { try statement.run(1, 2, 3) }
            #expect(tooMany.reason == .argumentCountMismatch(expected: 2, actual: 3))
            let outOfRange = try #require(throws: SQLiteError.self) { try statement.bind(1, at: 3) }
            #expect(outOfRange.code == .range)
        }
    }

    @Test("isReadOnly classifies statements the way application SQL needs", arguments: [
        ("SELECT * FROM t", true),
        ("WITH c(x) AS (SELECT v FROM t) SELECT x FROM c", true),
        ("INSERT INTO t(v) VALUES (1)", false),
        ("INSERT INTO t(v) VALUES (1) RETURNING v", false),
        ("UPDATE t SET v = 2", false),
        ("DELETE FROM t", false),
        ("CREATE TABLE u(x)", false),
        ("DROP TABLE t", false),
        ("PRAGMA user_version = 3", false),
        // SQLite reports transaction control as read-only; it must be refused by other means.
        ("BEGIN", true),
        ("COMMIT", true),
        ("SAVEPOINT s", true),
    ])
    func readOnlyClassification(sql: String, readOnly: Bool) throws {
        try withDatabase { db, _ in
            try db.execute("CREATE TABLE t(v)")
            #expect(try db.prepare(sql).isReadOnly == readOnly)
        }
    }

    @Test("column count and names follow the result columns and their aliases")
    func columnNames() throws {
        try withDatabase { db, _ in
            try db.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, body TEXT)")
            let statement = try db.prepare("SELECT id, body AS text, 1 + 1 FROM t")
            #expect(statement.columnCount == 3)
            #expect(statement.columnNames == ["id", "text", "1 + 1"])
            #expect(try db.prepare("INSERT INTO t(body) VALUES ('x')").columnCount == 0)
        }
    }

    @Test("query, rows, forEachRow and scalar read every row and leave the statement reusable")
    func queryAPIs() throws {
        try withDatabase { db, _ in
            try db.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT)")
            let insert = try db.prepare("INSERT INTO t(id, name) VALUES (?, ?)")
            for id in 1...5 {
                try insert.run(id, "n\(id)")
                #expect(db.lastInsertRowID == Int64(id))
                #expect(db.changes == 1)
            }
            let select = try db.prepare("SELECT id, name FROM t WHERE id >= ? ORDER BY id")
            #expect(try select.query([3]) { try $0.text(at: 1) } == ["n3", "n4", "n5"])
            #expect(!select.isBusy)
            #expect(try select.rows([5]) == [[5, "n5"]])
            var total: Int64 = 0
            try select.forEachRow([1]) { total += $0.int64(at: 0) }
            #expect(total == 15)
            #expect(try select.scalar([4]) == .integer(4))
            #expect(try select.scalar([9]) == nil)
            try db.run("UPDATE t SET name = upper(name) WHERE id > ?", [2])
            #expect(db.changes == 3)
            #expect(db.totalChanges == 8)
            #expect(try db.query("SELECT name FROM t WHERE id = 5") { try $0.text(at: 0) } == ["N5"])
        }
    }

    @Test("withBlobBytes reads a column's exact octets in place; NULL and an empty blob read as empty")
    func blobBytesInPlace() throws {
        try withDatabase { db, _ in
            try db.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, b BLOB)")
            try db.run("INSERT INTO t(id, b) VALUES (1, X'00FF7B22'), (2, X''), (3, NULL)")
            let select = try db.prepare("SELECT b FROM t ORDER BY id")
            let read = try select.query { row in row.withBlobBytes(at: 0) { Array($0) } }
            #expect(read == [[0x00, 0xFF, 0x7B, 0x22], [], []])
        }
    }

    @Test("run steps a write with RETURNING to completion")
    func runWithReturning() throws {
        try withDatabase { db, _ in
            try db.execute("CREATE TABLE t(v)")
            try db.run("INSERT INTO t(v) VALUES (1), (2), (3) RETURNING v")
            #expect(try db.scalar("SELECT count(*) FROM t") == .integer(3))
        }
    }

    @Test("run binds text and blobs in place: every value arrives exactly, and the parameters are NULL afterwards")
    func runBindsInPlace() throws {
        try withDatabase { db, _ in
            try db.execute("CREATE TABLE t(a, b, c, d, e)")
            // 2,000 rows of five values: texts (empty, multi-byte), blobs (empty, with NUL), integers, reals, NULL.
            var arguments: [SQLiteValue] = []
            for row in 0..<2_000 {
                arguments += [
                    .text(row % 7 == 0 ? "" : "ü-\(row)-€"), .blob(row % 5 == 0 ? [] : [0, UInt8(row % 256), 9]),
                    .integer(Int64(row) - 1_000), .real(Double(row) / 8), row % 3 == 0 ? .null : .text("x\(row)"),
                ]
            }
            let tuples = Array(repeating: "(?, ?, ?, ?, ?)", count: 2_000).joined(separator: ", ")
            let insert = try db.cachedStatement("INSERT INTO t(a, b, c, d, e) VALUES \(tuples)")
            try insert.run(arguments)
            let stored = try db.rows("SELECT a, b, c, d, e FROM t ORDER BY rowid")
            #expect(stored.flatMap { $0 } == arguments)

            // Stepped again without binding, the statement inserts NULLs: it kept no value and no pointer.
            _ = try insert.step()
            let nulls = try db.scalar("SELECT count(*) FROM t WHERE a IS NULL AND b IS NULL AND e IS NULL")
            #expect(nulls == .integer(2_000))
        }
    }

    @Test("a run that fails on a constraint throws, and leaves the statement reusable with NULL parameters")
    func runFailureClearsBindings() throws {
        try withDatabase { db, _ in
            try db.execute("CREATE TABLE t(k TEXT PRIMARY KEY, v BLOB)")
            let insert = try db.cachedStatement("INSERT INTO t(k, v) VALUES (?, ?), (?, ?)")
            #expect(throws: SQLiteError.self) {
                try insert.run([.text("same"), .blob([1]), .text("same"), .blob([2])])
            }
            #expect(try db.scalar("SELECT count(*) FROM t") == .integer(0))
            try insert.run([.text("one"), .blob([1, 2]), .text("two"), .blob([3])])
            let stored = try db.rows("SELECT k, v FROM t ORDER BY k")
            #expect(stored == [[.text("one"), .blob([1, 2])], [.text("two"), .blob([3])]])
            _ = try insert.step()
            #expect(try db.scalar("SELECT count(*) FROM t WHERE k IS NULL AND v IS NULL") == .integer(2))
        }
    }

    @Test("the statement cache returns the same statement for the same SQL, reset and with bindings cleared")
    func statementCacheReuses() throws {
        try withDatabase { db, _ in
            let sql = "SELECT ?"
            let first = try db.cachedStatement(sql)
            try first.bind(7, at: 1)
            #expect(try first.step())
            _ = try first.step()
            let second = try db.cachedStatement(sql)
            #expect(first === second)
            #expect(try second.step())
            #expect(second.isNull(at: 0), "bindings were cleared")
            #expect(try db.cachedStatement("SELECT 2") !== second)
            db.clearStatementCache()
            #expect(try db.cachedStatement(sql) !== first)
        }
    }

    @Test("a cached statement still being iterated is not handed out again; a fresh one is")
    func busyCachedStatementNotShared() throws {
        try withDatabase { db, _ in
            let sql = "SELECT value FROM json_each('[1,2,3]')"
            let outer = try db.cachedStatement(sql)
            var pairs: [[Int64]] = []
            while try outer.step() {
                let inner = try db.cachedStatement(sql)
                #expect(inner !== outer)
                pairs.append(try inner.query { $0.int64(at: 0) }.map { outer.int64(at: 0) * 10 + $0 })
            }
            #expect(pairs == [[11, 12, 13], [21, 22, 23], [31, 32, 33]])
            #expect(try db.cachedStatement(sql) === outer)
        }
    }

    @Test("a statement outliving its connection refuses to run with connectionClosed")
    func statementAfterClose() throws {
        try withDatabase { db, _ in
            let statement = try db.prepare("SELECT 1")
            db.close()
            let error = try #require(throws: SQLiteError.self) { try statement.step() }
            #expect(error.reason == .connectionClosed)
        }
    }
}
