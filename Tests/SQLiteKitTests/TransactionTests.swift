import SQLiteKit
import Testing

private struct Abandon: Error, Equatable {}

@Suite("Transactions and savepoints")
struct TransactionTests {
    @Test("a transaction commits when its body returns, visibly to another connection")
    func commitsOnSuccess() throws {
        try withDatabase { db, directory in
            try db.execute("CREATE TABLE t(v)")
            let value = try db.transaction(kind: .immediate) {
                #expect(db.isInTransaction)
                try db.run("INSERT INTO t(v) VALUES (1)")
                return 42
            }
            #expect(value == 42)
            #expect(!db.isInTransaction)
            let other = try Connection(path: directory.path("test.db"), mode: .readOnly)
            #expect(try other.scalar("SELECT count(*) FROM t") == .integer(1))
        }
    }

    @Test("a transaction rolls back when its body throws, and the body's own error is rethrown")
    func rollsBackOnThrow() throws {
        try withDatabase { db, _ in
            try db.execute("CREATE TABLE t(v)")
            #expect(throws: Abandon()) {
                try db.transaction {
                    try db.run("INSERT INTO t(v) VALUES (1)")
                    throw Abandon()
                }
            }
            #expect(!db.isInTransaction)
            #expect(try db.scalar("SELECT count(*) FROM t") == .integer(0))
        }
    }

    @Test("an immediate transaction takes the write lock at BEGIN; a deferred one does not")
    func immediateTakesWriteLock() throws {
        try withDatabase { db, directory in
            try db.setJournalMode(.wal)
            try db.execute("CREATE TABLE t(v)")
            let other = try Connection(path: directory.path("test.db"))
            try db.transaction(kind: .deferred) {
                try other.run("INSERT INTO t(v) VALUES (1)")
            }
            try db.transaction(kind: .immediate) {
                let error = try #require(throws: SQLiteError.self) { try other.run("INSERT INTO t(v) VALUES (2)") }
                #expect(error.primaryCode == .busy)
            }
            #expect(try db.scalar("SELECT count(*) FROM t") == .integer(1))
        }
    }

    @Test("a failing COMMIT rolls the transaction back and throws the commit error")
    func commitFailureRollsBack() throws {
        try withDatabase { db, _ in
            try db.setForeignKeys(true)
            try db.execute("""
                CREATE TABLE parent(id INTEGER PRIMARY KEY);
                CREATE TABLE child(parent INTEGER REFERENCES parent(id) DEFERRABLE INITIALLY DEFERRED);
                """)
            let error = try #require(throws: SQLiteError.self) {
                try db.transaction {
                    try db.run("INSERT INTO child(parent) VALUES (7)")
                }
            }
            #expect(error.code == .constraintForeignKey)
            #expect(!db.isInTransaction)
            #expect(try db.scalar("SELECT count(*) FROM child") == .integer(0))
        }
    }

    @Test("transactions do not nest: BEGIN inside a transaction is an SQLite error and the outer one survives")
    func transactionsDoNotNest() throws {
        try withDatabase { db, _ in
            try db.execute("CREATE TABLE t(v)")
            try db.transaction {
                try db.run("INSERT INTO t(v) VALUES (1)")
                let error = try #require(throws: SQLiteError.self) { try db.transaction {} }
                #expect(error.message == "cannot start a transaction within a transaction")
                #expect(db.isInTransaction)
            }
            #expect(try db.scalar("SELECT count(*) FROM t") == .integer(1))
        }
    }

    @Test("savepoints nest: an inner one rolls back on throw while the outer work commits")
    func savepointsNest() throws {
        try withDatabase { db, _ in
            try db.execute("CREATE TABLE t(v)")
            try db.transaction {
                try db.run("INSERT INTO t(v) VALUES ('outer')")
                try db.savepoint("level1") {
                    try db.run("INSERT INTO t(v) VALUES ('level1')")
                    #expect(throws: Abandon()) {
                        try db.savepoint("level2") {
                            try db.run("INSERT INTO t(v) VALUES ('level2')")
                            throw Abandon()
                        }
                    }
                    try db.savepoint("level2 \"quoted\"") {
                        try db.run("INSERT INTO t(v) VALUES ('level2b')")
                    }
                }
            }
            let values = try db.query("SELECT v FROM t ORDER BY rowid") { try $0.text(at: 0) }
            #expect(values == ["outer", "level1", "level2b"])
        }
    }

    @Test("an outermost savepoint acts as a transaction and rolls everything back on throw")
    func outermostSavepoint() throws {
        try withDatabase { db, _ in
            try db.execute("CREATE TABLE t(v)")
            #expect(throws: Abandon()) {
                try db.savepoint {
                    try db.run("INSERT INTO t(v) VALUES (1)")
                    #expect(db.isInTransaction)
                    throw Abandon()
                }
            }
            #expect(!db.isInTransaction)
            #expect(try db.scalar("SELECT count(*) FROM t") == .integer(0))
        }
    }

    @Test("commit and rollback hooks see transactions end, and a commit hook can veto")
    func hooks() throws {
        try withDatabase { db, _ in
            try db.execute("CREATE TABLE t(v)")
            var commits = 0
            var rollbacks = 0
            var veto = false
            try db.setCommitHook {
                commits += 1
                return veto ? .rollback : .commit
            }
            try db.setRollbackHook { rollbacks += 1 }
            try db.run("INSERT INTO t(v) VALUES (1)")
            #expect(commits == 1)
            veto = true
            let error = try #require(throws: SQLiteError.self) { try db.run("INSERT INTO t(v) VALUES (2)") }
            #expect(error.code.rawValue == 531)
            #expect(error.codeName == "SQLITE_CONSTRAINT_COMMITHOOK")
            #expect(rollbacks == 1)
            try db.setCommitHook(nil)
            try db.run("INSERT INTO t(v) VALUES (3)")
            #expect(commits == 2)
            #expect(try db.scalar("SELECT group_concat(v) FROM t") == .text("1,3"))
        }
    }
}
