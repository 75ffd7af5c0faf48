import SQLiteKit
import Synchronization
import Testing
import _SeedkitTestSupport

@testable import SynchroClient
@testable import SynchroStore

@Suite("Rebuild pages requested ahead")
struct RequestAheadTests {
    @Test("the reply sent ahead is taken only for the identical body; another body discards it")
    func takesOnlyTheSameBody() throws {
        let ahead = RequestAhead<Int>()
        let calls = Mutex(0)
        ahead.send([1, 2, 3]) { () throws(SyncError) in calls.withLock { $0 += 1 }; return 7 }
        #expect(try ahead.take([1, 2, 3])?.get() == 7)
        #expect(ahead.take([1, 2, 3]) == nil, "a reply is taken once")

        ahead.send([4]) { () throws(SyncError) in calls.withLock { $0 += 1 }; return 8 }
        #expect(ahead.take([5]) == nil, "another body: the reply is waited for and discarded")
        #expect(ahead.take([4]) == nil)
        #expect(calls.withLock { $0 } == 2)
    }

    @Test("a failure sent ahead surfaces as the exchange's typed error")
    func failureSurfaces() {
        let ahead = RequestAhead<Int>()
        let lost = SyncTransportFailure(rule: "transport", message: "lost", isRetryable: true)
        ahead.send([9]) { () throws(SyncError) in throw .transport(lost) }
        #expect(throws: SyncError.transport(lost)) { try ahead.take([9])?.get() }
    }

    @Test("nothing is sent once the cycle is stopping")
    func stoppingSendsNothing() {
        let stopping = Mutex(false)
        let ahead = RequestAhead<Int>(isCancelled: { stopping.withLock { $0 } })
        stopping.withLock { $0 = true }
        let calls = Mutex(0)
        ahead.send([1]) { () throws(SyncError) in calls.withLock { $0 += 1 }; return 1 }
        ahead.drain()
        #expect(ahead.take([1]) == nil)
        #expect(calls.withLock { $0 } == 0)
    }
}

/// A connection lost before any reply.
private struct InjectedLoss: Error {}

extension SyncCycleTests {
    @Test("a rebuild page requested ahead that fails is asked for again with the same request, and the cycle completes")
    func failedPageAheadIsRetried() throws {
        transport.before { path, count in
            if path == "/sync/rebuild" && count == 2 { throw InjectedLoss() }
        }
        let summary = try runCycle()
        let bodies = transport.bodies("/sync/rebuild")
        #expect(bodies.count >= 3)
        #expect(bodies[1] == bodies[2], "the failed page is requested again, byte for byte")
        #expect(bodies[0] != bodies[1])
        #expect(summary.retries == 1 && recorder.delays.count == 1)
        var pages = 0
        for scope in try fixture.scopes() {
            let rows = try fixture.count("SELECT count(*) FROM _synchro_scope_rows WHERE scope_id = '\(scope.id)'")
            pages += max(1, Int((rows + 39) / 40))
        }
        #expect(summary.rebuildRequests == pages + 1, "one request per page, plus the one that failed")
        #expect(try fixture.scopes().allSatisfy { $0.cursor != nil && $0.checksum != nil })
    }
}

extension SyncCycleTests {
    @Test("a rebuild checkpoints beside the engine, then gives back the engine's own checkpoint and page cache")
    func checkpointsBesideRebuild() throws {
        let store = fixture.store
        try store.withEngine { (connection) throws(ClientStoreError) in
            do throws(SQLiteError) {
                try connection.execute("PRAGMA wal_autocheckpoint = 5")
                try connection.execute("PRAGMA cache_size = -1234")
            } catch {
                throw .sqlite(error)
            }
        }
        let summary = try runCycle()
        #expect(summary.rebuildRequests >= 3)
        store.checkpointer.drain()
        #expect(store.checkpointer.completed >= 1, "pages of more than 5 frames each were checkpointed beside")
        let settings = try store.withEngine { (connection) throws(ClientStoreError) -> [Int64] in
            do throws(SQLiteError) {
                return [
                    try connection.scalar("PRAGMA wal_autocheckpoint")?.integerValue ?? -1,
                    try connection.scalar("PRAGMA cache_size")?.integerValue ?? 0,
                ]
            } catch {
                throw .sqlite(error)
            }
        }
        #expect(settings == [5, -1234])
    }
}
