import Dispatch
import SQLiteKit
import Testing

@Suite("Interrupts")
struct InterruptTests {
    // Bounded so that a broken interrupt fails the test (a count is returned) instead of hanging it.
    static let longQuery = """
        WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 500000000)
        SELECT count(*) FROM c WHERE tick(x) IS NOT NULL
        """

    @Test("interrupting from another thread stops a running query with SQLITE_INTERRUPT")
    func interruptFromAnotherThread() throws {
        try withDatabase { db, _ in
            let started = DispatchSemaphore(value: 0)
            var signalled = false
            try db.createFunction(name: "tick", argumentCount: 1) { arguments in
                if !signalled {
                    signalled = true
                    started.signal()
                }
                return arguments[0]
            }
            let handle = db.interruptHandle
            DispatchQueue.global().async {
                started.wait()
                handle.interrupt()
            }
            let error = try #require(throws: SQLiteError.self) { try db.scalar(Self.longQuery) }
            #expect(error.code == .interrupt)
            #expect(try db.scalar("SELECT 1") == .integer(1), "the next statement runs normally")
        }
    }

    @Test("a statement interrupted from inside SQL fails and rolls back its transaction's statement")
    func interruptFromFunction() throws {
        try withDatabase { db, _ in
            try db.execute("CREATE TABLE t(v)")
            let handle = db.interruptHandle
            try db.createFunction(name: "tick", argumentCount: 1) { arguments in
                if arguments[0] == .integer(1000) {
                    handle.interrupt()
                }
                return arguments[0]
            }
            let error = try #require(throws: SQLiteError.self) {
                try db.run("INSERT INTO t(v) " + Self.longQuery.replacingCount())
            }
            #expect(error.code == .interrupt)
            #expect(try db.scalar("SELECT count(*) FROM t") == .integer(0))
        }
    }

    @Test("interrupting a closed connection is a harmless no-op")
    func interruptAfterClose() throws {
        try withDatabase { db, _ in
            let handle = db.interruptHandle
            db.close()
            handle.interrupt()
            #expect(!db.isOpen)
        }
    }
}

private extension String {
    /// The long query selecting every row instead of counting them, so an INSERT writes as it goes.
    func replacingCount() -> String {
        replacing("SELECT count(*) FROM c", with: "SELECT x FROM c")
    }
}
