import Foundation
import SQLiteKit
@testable import SynchroServer
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// WAL checkpoints of the reference server run beside its connection (``WALCheckpointer``), not inside the
/// commits of the requests that write, and the log stays bounded.
@Suite("Server checkpoints")
struct ServerCheckpointTests {
    private static func size(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int) ?? 0
    }

    private static func demo() throws -> Dataset {
        try Dataset(directory: RepositoryLayout.root.appendingPathComponent("seeds/demo"))
    }

    @Test("a commit past the checkpoint threshold leaves the log to the checkpointer's connection")
    func commitDoesNotCheckpoint() throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-server-checkpoint")
        let path = directory.path("server.db")
        let store = try ServerStore(
            path: path, dataset: try Self.demo(), rowsOverride: 10, clock: ManualServerClock(), checkpointFrames: 10)
        let checkpointer = try #require(store.checkpointer)
        checkpointer.drain()
        let checkpointed = checkpointer.completed
        let before = Self.size(path)
        checkpointer.suspend()
        // About 50 pages of log in one commit, five times the threshold and below the log limit.
        try store.db.transaction {
            try store.setMeta("padding", .blob([UInt8](repeating: 7, count: 200_000)))
        }
        // An automatic checkpoint in the commit would have copied the pages into the database file by now.
        #expect(Self.size(path) == before, "the committing connection copied the log into the database")
        #expect(Self.size(path + "-wal") >= 48 * 4096)
        checkpointer.resume()
        checkpointer.drain()
        #expect(checkpointer.completed == checkpointed + 1)
        #expect(Self.size(path) >= before + 200_000, "the checkpointer copied the log")
    }

    @Test("a request that finds the log long and not restarted waits for the checkpoint; the log stays bounded")
    func requestsBoundTheLog() throws {
        // A threshold above the connect's own commit (2 frames): a new store is bulk-loaded outside the log
        // (``InitialStoreFile``), so the connect's frames are all the log holds before the first staging, and the
        // first staging must not find the log already past the threshold.
        let server = try RunningServer(rows: 2000, checkpointFrames: 3)
        let client = try WireClient.connect(server)
        let checkpointer = try #require(server.engine.checkpointer)
        let wal = server.directory.path("server.db-wal")
        // A reader keeps the checkpoint from copying the whole log, so the log cannot restart.
        let reader = try Connection(path: server.directory.path("server.db"))
        try reader.execute("BEGIN")
        _ = try reader.scalar("SELECT count(*) FROM server_meta")
        func stage() throws {
            let page = try client.rebuildPage(
                scope: "catalog", rebuildID: WireClient.newRebuildID(), cursor: nil, limit: 1000)
            #expect(page.status == 200)
        }
        try stage()
        let waits = checkpointer.boundWaits
        #expect(checkpointer.mark.frames >= 16, "one staging writes more than the log limit")
        // The second staging finds the first one's frames still in the log: it waits once its response is built.
        try stage()
        #expect(checkpointer.boundWaits == waits + 1, "the request did not wait for the checkpoint")
        let afterTwo = Self.size(wal)
        try reader.execute("COMMIT")
        reader.close()
        for _ in 0..<5 { try stage() }
        // Each later staging restarted the log or waited: the file holds at most a few stagings, not seven (two
        // stagings and the connect make `afterTwo`; seven would be 3.5 times that).
        #expect(Self.size(wal) <= 5 * afterTwo / 2)
    }
}
