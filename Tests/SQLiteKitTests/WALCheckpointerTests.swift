import SQLiteKit
import Testing

@Suite("WAL checkpointer")
struct WALCheckpointerTests {
    @Test("a unit of work waits only when it found the log past the threshold and the log did not restart")
    func boundSinceMark() throws {
        try withDatabase { db, directory in
            try db.setJournalMode(.wal)
            try db.execute("CREATE TABLE t(v)")
            let checkpointer = WALCheckpointer(path: directory.path("test.db"))
            defer { checkpointer.close() }
            // Frame counts as a writer's WAL hook would report them: threshold 10, limit 40.
            func unit(committing frames: Int) -> Int {
                let start = checkpointer.mark
                checkpointer.committed(frames: frames, threshold: 10)
                checkpointer.bound(atFrames: 40, since: start, threshold: 10)
                return checkpointer.boundWaits
            }
            #expect(unit(committing: 50) == 0, "the log is long with the unit's own frames only")
            #expect(unit(committing: 60) == 1, "the log was past the threshold before and grew without restarting")
            #expect(checkpointer.mark.frames == 0, "after the wait the next write restarts the log")
            #expect(unit(committing: 45) == 1, "the unit started from a restarted log")
            #expect(unit(committing: 41) == 1, "fewer frames than before: the log restarted during the unit")
            #expect(unit(committing: 42) == 2)
            #expect(unit(committing: 5) == 2, "restarted and short")
        }
    }
}
