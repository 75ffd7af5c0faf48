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
        store.checkpointer.drain()
        let checkpointed = store.checkpointer.completed
        let before = Self.size(path)
        store.checkpointer.suspend()
        // About 50 pages of log in one commit, five times the threshold and below the log limit.
        try store.db.transaction(kind: .immediate) {
            try store.setMeta("padding", .blob([UInt8](repeating: 7, count: 200_000)))
        }
        // An automatic checkpoint in the commit would have copied the pages into the database file by now.
        #expect(Self.size(path) == before, "the committing connection copied the log into the database")
        #expect(Self.size(path + "-wal") >= 48 * 4096)
        store.checkpointer.resume()
        store.checkpointer.drain()
        #expect(store.checkpointer.completed == checkpointed + 1)
        #expect(Self.size(path) >= before + 200_000, "the checkpointer copied the log")
    }

    @Test("a staging request that leaves the log past its limit waits for the checkpoint; the log stays bounded")
    func stagingBoundsTheLog() throws {
        let server = try RunningServer(rows: 2000, checkpointFrames: 2)
        let client = try WireClient.connect(server)
        let checkpointer = server.engine.checkpointer
        let waits = checkpointer.boundWaits
        let first = try client.rebuildPage(
            scope: "catalog", rebuildID: WireClient.newRebuildID(), cursor: nil, limit: 1000)
        #expect(first.status == 200)
        #expect(checkpointer.boundWaits == waits + 1, "the staging request did not wait for the checkpoint")
        let wal = server.directory.path("server.db-wal")
        let afterOne = Self.size(wal)
        for _ in 0..<6 {
            let page = try client.rebuildPage(
                scope: "catalog", rebuildID: WireClient.newRebuildID(), cursor: nil, limit: 1000)
            #expect(page.status == 200)
        }
        #expect(checkpointer.boundWaits == waits + 7)
        // Each staging restarted a checkpointed log: the file holds one staging's pages, not seven.
        #expect(Self.size(wal) < 2 * afterOne)
    }
}
