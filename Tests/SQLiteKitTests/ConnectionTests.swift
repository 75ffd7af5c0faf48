import SQLiteKit
import Testing
import _SeedkitTestSupport

@Suite("Connections")
struct ConnectionTests {
    @Test("WAL mode is set and reported, recorded in the file header, and DELETE mode switches it back")
    func journalModes() throws {
        try withDatabase { db, directory in
            let path = directory.path("test.db")
            try db.execute("CREATE TABLE t(v)")
            #expect(try db.journalMode() == .delete)
            #expect(try db.setJournalMode(.wal) == .wal)
            #expect(try db.journalMode() == .wal)
            try db.run("INSERT INTO t(v) VALUES (1)")
            #expect(fileExists(path + "-wal"))
            #expect(Array(try databaseHeader(path)[18...19]) == [2, 2])
            #expect(try db.setJournalMode(.delete) == .delete)
            #expect(Array(try databaseHeader(path)[18...19]) == [1, 1])
            #expect(!fileExists(path + "-wal"))
        }
    }

    @Test("an in-memory database reports memory when asked for WAL")
    func inMemoryJournal() throws {
        let db = try Connection(path: ":memory:")
        #expect(try db.setJournalMode(.wal) == .memory)
    }

    @Test("a read-only connection refuses writes with SQLITE_READONLY and still reads")
    func readOnlyOpen() throws {
        try withDatabase { db, directory in
            try db.execute("CREATE TABLE t(v); INSERT INTO t(v) VALUES (1);")
            db.close()
            let reader = try Connection(path: directory.path("test.db"), mode: .readOnly)
            #expect(reader.isReadOnly)
            #expect(try reader.scalar("SELECT v FROM t") == .integer(1))
            let error = try #require(throws: SQLiteError.self) { try reader.run("INSERT INTO t(v) VALUES (2)") }
            #expect(error.primaryCode == .readOnly)
            #expect(throws: SQLiteError.self) { try reader.execute("CREATE TABLE u(x)") }
            #expect(throws: SQLiteError.self) { try reader.setUserVersion(3) }
            let uri = try Connection(path: "file:\(directory.path("test.db"))?mode=ro", uri: true)
            #expect(uri.isReadOnly)
            #expect(try #require(throws: SQLiteError.self) { try uri.run("DELETE FROM t") }.primaryCode == .readOnly)
            let writer = try Connection(path: directory.path("test.db"), mode: .readWrite)
            #expect(!writer.isReadOnly)
        }
    }

    @Test("opening a missing file without create is SQLITE_CANTOPEN and creates nothing")
    func missingFile() throws {
        let directory = try TemporaryDirectory(prefix: "sqlitekit")
        let path = directory.path("missing.db")
        for mode in [Connection.OpenMode.readOnly, .readWrite] {
            let error = try #require(throws: SQLiteError.self) { try Connection(path: path, mode: mode) }
            #expect(error.primaryCode == .cannotOpen)
        }
        #expect(!fileExists(path))
    }

    @Test("integrity_check names an index that disagrees with its table, as does the table's check; quick_check not")
    func integrityCheck() throws {
        try withDatabase { db, directory in
            try db.execute("""
                CREATE TABLE t(a, b);
                CREATE INDEX t_a ON t(a);
                CREATE TABLE "u""v"(c NOT NULL);
                INSERT INTO t(a, b) VALUES (1, 10), (2, 20), (3, 30);
                INSERT INTO "u""v"(c) VALUES (1);
                """)
            #expect(try db.integrityCheck() == ["ok"])
            for scope: Connection.IntegrityCheckScope in [.full, .quick, .table("t"), .table("u\"v")] {
                #expect(try db.integrityCheck(scope) == ["ok"])
            }
            // Point the index's schema at another column: its entries no longer match the table.
            try db.execute("""
                PRAGMA writable_schema = ON;
                UPDATE sqlite_schema SET sql = 'CREATE INDEX t_a ON t(b)' WHERE name = 't_a';
                PRAGMA writable_schema = OFF;
                """)
            db.close()
            let reopened = try Connection(path: directory.path("test.db"), mode: .readOnly)
            #expect(try reopened.integrityCheck(.quick) == ["ok"])
            #expect(try reopened.integrityCheck(.table("u\"v")) == ["ok"])
            let table = try reopened.integrityCheck(.table("t"))
            #expect(table != ["ok"] && table.contains { $0.contains("t_a") })
            #expect(try reopened.integrityCheck(.full) == table)
            #expect(try reopened.integrityCheck() == table)
            #expect(throws: SQLiteError.self) { try reopened.integrityCheck(.table("missing")) }
        }
    }

    @Test("backup copies every table of a live WAL database, header journal mode included")
    func backupCopies() throws {
        try withDatabase { db, directory in
            try db.setJournalMode(.wal)
            try db.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, payload BLOB); CREATE INDEX t_p ON t(payload);")
            let insert = try db.prepare("INSERT INTO t(payload) VALUES (?)")
            try db.transaction {
                for index in 0..<2000 {
                    try insert.run(SQLiteValue.blob([UInt8(index % 256), 0, UInt8(index / 256)]))
                }
            }
            try db.setUserVersion(19)
            let copyPath = directory.path("copy.db")
            try db.backup(toPath: copyPath)
            #expect(!fileExists(copyPath + "-wal"))
            let copy = try Connection(path: copyPath)
            #expect(try copy.integrityCheck() == ["ok"])
            #expect(try copy.userVersion() == 19)
            #expect(try copy.rows("SELECT * FROM t ORDER BY id") == db.rows("SELECT * FROM t ORDER BY id"))
            #expect(Array(try databaseHeader(copyPath)[18...19]) == [2, 2])
            #expect(try copy.setJournalMode(.delete) == .delete)
            copy.close()
            #expect(Array(try databaseHeader(copyPath)[18...19]) == [1, 1])
            #expect(!fileExists(copyPath + "-wal"))
        }
    }

    @Test("backup into an open connection replaces its content")
    func backupToConnection() throws {
        try withDatabase { db, _ in
            try db.execute("CREATE TABLE t(v); INSERT INTO t(v) VALUES ('source');")
            let destination = try Connection(path: ":memory:")
            try destination.execute("CREATE TABLE other(x)")
            try db.backup(to: destination)
            #expect(try destination.tableExists("t"))
            #expect(try !destination.tableExists("other"))
            #expect(try destination.scalar("SELECT v FROM t") == .text("source"))
        }
    }

    @Test("backup into a read-only connection fails with a typed SQLITE_READONLY error")
    func backupIntoReadOnly() throws {
        try withDatabase { db, directory in
            try db.execute("CREATE TABLE t(v)")
            let targetPath = directory.path("target.db")
            try Connection(path: targetPath).execute("CREATE TABLE kept(x)")
            let target = try Connection(path: targetPath, mode: .readOnly)
            let error = try #require(throws: SQLiteError.self) { try db.backup(to: target) }
            #expect(error.primaryCode == .readOnly)
            #expect(try target.tableExists("kept"))
        }
    }

    @Test("user_version, foreign_keys and synchronous are set and read back")
    func pragmas() throws {
        try withDatabase { db, _ in
            #expect(try db.userVersion() == 0)
            try db.setUserVersion(Int32.max)
            #expect(try db.userVersion() == Int32.max)
            try db.setUserVersion(-5)
            #expect(try db.userVersion() == -5)

            #expect(try db.foreignKeysEnabled() == false)
            #expect(try db.setForeignKeys(true))
            try db.execute("CREATE TABLE p(id INTEGER PRIMARY KEY); CREATE TABLE c(p REFERENCES p(id));")
            #expect(throws: SQLiteError.self) { try db.run("INSERT INTO c(p) VALUES (1)") }
            let insideTransaction = try db.transaction { try db.setForeignKeys(false) }
            #expect(insideTransaction, "SQLite ignores the change inside a transaction")

            for mode in Connection.SynchronousMode.allCases {
                try db.setSynchronous(mode)
                #expect(try db.synchronous() == mode)
            }
        }
    }

    @Test("tableExists matches tables case-insensitively and ignores views; columns reports table_info")
    func schemaInspection() throws {
        try withDatabase { db, _ in
            try db.execute("""
                CREATE TABLE "Notes"(id TEXT PRIMARY KEY NOT NULL, body TEXT DEFAULT 'none', n INTEGER, raw);
                CREATE VIEW note_view AS SELECT id FROM Notes;
                CREATE TEMP TABLE scratch(x);
                """)
            #expect(try db.tableExists("Notes"))
            #expect(try db.tableExists("notes"))
            #expect(try !db.tableExists("note_view"))
            #expect(try !db.tableExists("missing"))
            #expect(try !db.tableExists("scratch"))
            #expect(try db.tableExists("scratch", schema: "temp"))
            let columns = try db.columns(of: "notes")
            #expect(columns == [
                .init(name: "id", declaredType: "TEXT", isNotNull: true, defaultSQL: nil, primaryKeyPosition: 1),
                .init(name: "body", declaredType: "TEXT", isNotNull: false, defaultSQL: "'none'",
                      primaryKeyPosition: 0),
                .init(name: "n", declaredType: "INTEGER", isNotNull: false, defaultSQL: nil, primaryKeyPosition: 0),
                .init(name: "raw", declaredType: "", isNotNull: false, defaultSQL: nil, primaryKeyPosition: 0),
            ])
            #expect(columns[0].isPrimaryKey)
            #expect(try db.columns(of: "missing").isEmpty)
        }
    }

    @Test("close is idempotent and every later call fails with connectionClosed")
    func closeIsIdempotent() throws {
        try withDatabase { db, _ in
            #expect(db.isOpen)
            db.close()
            db.close()
            #expect(!db.isOpen)
            #expect(!db.isInTransaction)
            let error = try #require(throws: SQLiteError.self) { try db.execute("SELECT 1") }
            #expect(error.reason == .connectionClosed)
            #expect(throws: SQLiteError.self) { try db.prepare("SELECT 1") }
            #expect(throws: SQLiteError.self) { try db.cachedStatement("SELECT 1") }
            db.interrupt()
        }
    }

    @Test("a WAL checkpoint in truncate mode empties the -wal file")
    func checkpointTruncates() throws {
        try withDatabase { db, directory in
            try db.setJournalMode(.wal)
            try db.execute("CREATE TABLE t(v); INSERT INTO t(v) VALUES (zeroblob(100000));")
            let before = try db.checkpoint(.passive)
            #expect(before.logFrames > 0)
            try db.checkpoint(.truncate)
            let wal = try databaseHeader(directory.path("test.db-wal"))
            #expect(wal.isEmpty)
        }
    }

    @Test("the busy timeout is accepted and identifier quoting doubles embedded quotes")
    func busyTimeoutAndQuoting() throws {
        try withDatabase { db, _ in
            try db.setBusyTimeout(milliseconds: 5000)
            #expect(SQLiteIdentifier.quote("plain") == "\"plain\"")
            #expect(SQLiteIdentifier.quote("a\"b") == "\"a\"\"b\"")
            let odd = "we\"ird \u{00E9} name"
            try db.execute("CREATE TABLE \(SQLiteIdentifier.quote(odd))(v)")
            #expect(try db.tableExists(odd))
        }
    }
}
