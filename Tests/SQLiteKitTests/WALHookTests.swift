import SQLiteKit
import Testing

@Suite("WAL hook")
struct WALHookTests {
    @Test("the hook sees the log's frame count after each commit and replaces the automatic checkpoint")
    func framesAfterCommits() throws {
        try withDatabase { db, _ in
            try db.setJournalMode(.wal)
            try db.execute("CREATE TABLE t(v)")
            try db.execute("PRAGMA wal_autocheckpoint = 2")
            var frames: [Int] = []
            try db.setWALHook { frames.append($0) }
            for value in 0..<4 {
                try db.run("INSERT INTO t(v) VALUES (?)", [.text(String(repeating: "x", count: 3000 + value))])
            }
            #expect(frames.count == 4)
            #expect(frames == frames.sorted() && frames[0] > 0)
            // No checkpoint ran in the commits: the log still holds every frame written since the table.
            #expect(frames.last ?? 0 > 2)

            try db.setWALHook(nil)
            try db.execute("PRAGMA wal_autocheckpoint = 2")
            try db.run("INSERT INTO t(v) VALUES ('after')")
            #expect(frames.count == 4, "a removed hook is not called")
            let (log, checkpointed) = try db.checkpoint(.passive)
            #expect(log == checkpointed)
        }
    }
}
