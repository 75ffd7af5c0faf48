import SQLiteKit
import Testing

@Suite("Errors")
struct SQLiteErrorTests {
    static let secret = "s3cret-row-value-4711"

    @Test("a UNIQUE violation carries SQLITE_CONSTRAINT_UNIQUE and its description never shows the bound value")
    func uniqueViolation() throws {
        try withDatabase { db, _ in
            try db.execute("CREATE TABLE accounts(email TEXT UNIQUE)")
            let insert = try db.prepare("INSERT INTO accounts(email) VALUES (?)")
            try insert.run(Self.secret)
            let error = try #require(throws: SQLiteError.self) { try insert.run(Self.secret) }
            #expect(error.reason == .sqlite)
            #expect(error.code == .constraintUnique)
            #expect(error.code.rawValue == 2067)
            #expect(error.primaryCode == .constraint)
            #expect(error.codeName == "SQLITE_CONSTRAINT_UNIQUE")
            #expect(error.message == "UNIQUE constraint failed: accounts.email")
            #expect(error.description == "SQLITE_CONSTRAINT_UNIQUE (2067): UNIQUE constraint failed: accounts.email")
            for rendering in [error.description, String(reflecting: error), String(describing: error), dumped(error)] {
                #expect(!rendering.contains(Self.secret))
                #expect(!rendering.contains("INSERT"))
            }
            #expect(error.sqlForDebugging == "INSERT INTO accounts(email) VALUES (?)")
        }
    }

    @Test("SQL text with literals is kept out of descriptions and reachable only through sqlForDebugging")
    func sqlLiteralsStayPrivate() throws {
        try withDatabase { db, _ in
            try db.execute("CREATE TABLE t(v NOT NULL)")
            let sql = "INSERT INTO t(v) SELECT NULL WHERE '\(Self.secret)' IS NOT NULL"
            let error = try #require(throws: SQLiteError.self) { try db.run(sql) }
            #expect(error.code == .constraintNotNull)
            #expect(!error.description.contains(Self.secret))
            #expect(!String(reflecting: error).contains(Self.secret))
            #expect(!dumped(error).contains(Self.secret))
            #expect(error.sqlForDebugging == sql)
        }
    }

    @Test("each constraint kind reports its extended code", arguments: [
        ("INSERT INTO child(parent) VALUES (99)", SQLiteResultCode.constraintForeignKey,
         "SQLITE_CONSTRAINT_FOREIGNKEY"),
        ("INSERT INTO child(parent, n) VALUES (1, -1)", .constraintCheck, "SQLITE_CONSTRAINT_CHECK"),
        ("INSERT INTO parent(id, name) VALUES (2, NULL)", .constraintNotNull, "SQLITE_CONSTRAINT_NOTNULL"),
        ("INSERT INTO parent(id, name) VALUES (1, 'again')", .constraintPrimaryKey, "SQLITE_CONSTRAINT_PRIMARYKEY"),
        ("INSERT INTO guarded(v) VALUES (1)", .constraintTrigger, "SQLITE_CONSTRAINT_TRIGGER"),
        ("INSERT INTO strict_table(n) VALUES ('text')", .constraintDataType, "SQLITE_CONSTRAINT_DATATYPE"),
    ])
    func constraintCodes(sql: String, code: SQLiteResultCode, name: String) throws {
        try withDatabase { db, _ in
            try db.setForeignKeys(true)
            try db.execute("""
                CREATE TABLE parent(id TEXT PRIMARY KEY, name TEXT NOT NULL);
                CREATE TABLE child(parent INTEGER REFERENCES parent(id), n INTEGER CHECK (n IS NULL OR n >= 0));
                CREATE TABLE guarded(v);
                CREATE TRIGGER guard BEFORE INSERT ON guarded BEGIN SELECT RAISE(ABORT, 'guarded is closed'); END;
                CREATE TABLE strict_table(n INTEGER) STRICT;
                INSERT INTO parent(id, name) VALUES (1, 'one');
                """)
            let error = try #require(throws: SQLiteError.self) { try db.run(sql) }
            #expect(error.code == code)
            #expect(error.codeName == name)
            #expect(error.primaryCode == .constraint)
        }
    }

    @Test("result code names match sqlite3.h, and unknown codes still get a readable name", arguments: [
        (Int32(0), "SQLITE_OK"), (5, "SQLITE_BUSY"), (517, "SQLITE_BUSY_SNAPSHOT"), (8, "SQLITE_READONLY"),
        (9, "SQLITE_INTERRUPT"), (23, "SQLITE_AUTH"), (787, "SQLITE_CONSTRAINT_FOREIGNKEY"),
        (2067, "SQLITE_CONSTRAINT_UNIQUE"), (522, "SQLITE_IOERR_SHORT_READ"), (8458, "SQLITE_IOERR_CORRUPTFS"),
        (19 | 200 << 8, "SQLITE_CONSTRAINT_200"), (231, "SQLITE_231"),
    ] as [(Int32, String)])
    func resultCodeNames(code: Int32, name: String) {
        #expect(SQLiteResultCode(rawValue: code).name == name)
    }

    @Test("a syntax error is SQLITE_ERROR with SQLite's message")
    func syntaxError() throws {
        try withDatabase { db, _ in
            let error = try #require(throws: SQLiteError.self) { try db.prepare("SELEC 1") }
            #expect(error.code == .error)
            #expect(!error.code.isExtended)
            #expect(error.message == "near \"SELEC\": syntax error")
        }
    }
}

private func dumped(_ value: some Any) -> String {
    var output = ""
    dump(value, to: &output)
    return output
}
