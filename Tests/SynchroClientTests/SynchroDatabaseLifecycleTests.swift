import Foundation
import SQLiteKit
import SynchroClient
import SynchroProtocol
import Testing
import _SeedkitTestSupport

@Suite("SynchroDatabase: pause, resume, wake, close and settlement (seed 002)")
struct SynchroDatabaseLifecycleTests {
    let server: RunningServer
    let directory: TemporaryDirectory
    let transport: CycleTransport
    let clock = ManualClientClock()
    let scheduler: ManualSyncScheduler
    let database: SynchroDatabase

    init() throws {
        server = try RunningServer(rows: 20)
        directory = try TemporaryDirectory(prefix: "synchro-lifecycle")
        transport = CycleTransport(server: server)
        let scheduler = ManualSyncScheduler(clock: clock)
        self.scheduler = scheduler
        database = try SynchroDatabase(configuration: SynchroDatabaseTests.configuration(
            path: directory.path("app.db"), transport: transport, scheduler: scheduler))
    }

    /// Starts sync and runs the first cycle (connect and the initial rebuilds).
    func warm() throws {
        try database.startSync()
        scheduler.runNext()
        #expect(database.getSyncStatus().state == .ready)
        transport.reset()
    }

    func insertNote(_ id: String) throws -> String {
        try database.execute(SynchroDatabaseTests.insertNote, [.text(id), .text("t"), .text("2026-01-01T00:00:00.000Z")])
        return try #require(try database.inspectRetainedMutationRecords().last?.mutationID)
    }

    @Test("pause stops delivery but keeps capturing; wake does nothing while paused; resume reconnects and pushes")
    func pauseAndResume() throws {
        #expect(throws: SynchroDatabaseError.syncNotStarted) { try database.pause() }
        try warm()
        try database.pause()
        #expect(scheduler.pendingDelays.isEmpty, "the interval cycle is cancelled")
        let paused = database.getSyncStatus()
        #expect(paused.state == .stopped)
        #expect(paused.isStarted && paused.isPaused)

        let mutation = try insertNote("paused-note")
        #expect(try database.wake() == false)
        #expect(throws: SynchroDatabaseError.syncPaused) { try database.syncNow() }
        try database.startSync()
        #expect(scheduler.pendingDelays.isEmpty, "start is idempotent while paused")
        #expect(scheduler.runNext() == nil)
        #expect(transport.paths.isEmpty, "nothing is sent while paused")

        try database.resume()
        #expect(!database.getSyncStatus().isPaused)
        scheduler.runNext()
        #expect(transport.paths == ["/sync/connect", "/sync/push", "/sync/pull"])
        #expect(try database.inspectRetainedMutationRecords().first { $0.mutationID == mutation }?.state == .accepted)
        #expect(scheduler.pendingDelays == [.seconds(30)])
    }

    @Test("a pause during a cycle stops it at the next step; a resume during it gets its own cycle afterwards")
    func pauseAndResumeDuringCycle() throws {
        try warm()
        _ = try insertNote("racing-note")
        let database = self.database
        transport.before { path, _ in
            if path == "/sync/push" {
                try database.pause()
                try database.resume()
            }
        }
        try database.wake()
        scheduler.runNext()
        #expect(database.getSyncStatus().lastError == .cancelled)
        #expect(transport.paths == ["/sync/push"])
        transport.before { _, _ in }
        // The resumed lifecycle's own cycle reconnects: a pause ends the connection.
        #expect(scheduler.pendingDelays == [.zero])
        scheduler.runNext()
        #expect(transport.paths == ["/sync/push", "/sync/connect", "/sync/pull"])
        #expect(database.getSyncStatus().state == .ready)
    }

    @Test("wake is a hint: nothing when stopped, a cycle now when started, a rerun while one runs")
    func wake() throws {
        #expect(try database.wake() == false)
        #expect(scheduler.pendingDelays.isEmpty)
        try warm()
        #expect(scheduler.pendingDelays == [.seconds(30)])
        #expect(try database.wake())
        #expect(scheduler.pendingDelays == [.zero])
        scheduler.runNext()
        #expect(transport.paths == ["/sync/pull"])
        let database = self.database
        transport.before { path, count in
            if path == "/sync/pull" && count == 2 { try database.wake() }
        }
        scheduler.runNext()
        #expect(scheduler.pendingDelays == [.zero], "the wake during the cycle runs right after it")
    }

    @Test("settlement: accepted and rejected outcomes with their stored JSON; unknown IDs are typed errors")
    func settlement() async throws {
        try warm()
        let accepted = try insertNote("settle-note")
        try database.execute("UPDATE products SET title = 'not allowed' WHERE id = (SELECT min(id) FROM products)")
        let rejected = try #require(try database.inspectRetainedMutationRecords().last?.mutationID)
        let database = self.database
        let scheduler = self.scheduler
        // The waits are registered before the cycle runs; the cycle's end resumes them.
        async let first = database.settlement(of: accepted)
        async let second = database.settlement(of: rejected)
        try await Task.yieldUntil { database.pendingSettlementCount == 2 }
        try database.wake()
        scheduler.runNext()
        guard case .accepted(let outcome) = try await first else {
            Issue.record("the insert is accepted")
            return
        }
        #expect(outcome.contains(accepted))
        guard case .rejectedTerminal(let rejection) = try await second else {
            Issue.record("the policy refusal is a terminal rejection")
            return
        }
        #expect(rejection.contains("policy_rejected"))
        // Already settled: answered at once from the store.
        #expect(try await database.settlement(of: accepted) == .accepted(outcomeJSON: outcome))
        await #expect(throws: SynchroDatabaseError.unknownMutation(mutationID: "no-such-mutation")) {
            try await database.settlement(of: "no-such-mutation")
        }
    }

    @Test("close fails pending settlements, is idempotent and releases the store for the next owner at once")
    func closeReleases() async throws {
        try warm()
        let mutation = try insertNote("closing-note")
        let database = self.database
        let wait = Task { () async -> SynchroDatabaseError? in
            do throws(SynchroDatabaseError) {
                _ = try await database.settlement(of: mutation)
                return nil
            } catch {
                return error
            }
        }
        try await Task.yieldUntil { database.pendingSettlementCount == 1 }
        database.close()
        #expect(await wait.value == .closed)
        database.close()
        #expect(throws: SynchroDatabaseError.closed) { try database.startSync() }
        let next = try SynchroDatabase(configuration: SynchroDatabaseTests.configuration(
            path: directory.path("app.db"), transport: transport, scheduler: scheduler))
        #expect(try next.inspectRetainedMutationRecords().map(\.mutationID) == [mutation])
        next.close()
    }

    @Test("queryOne returns the first row or nil and refuses writes like query")
    func queryOne() throws {
        try warm()
        try database.execute(SynchroDatabaseTests.insertNote, [.text("q1"), .text("a"), .text("2026-01-01T00:00:00.000Z")])
        let row = try #require(try database.queryOne("SELECT id FROM notes WHERE id = ?", [.text("q1")]))
        #expect(row.values == [.text("q1")])
        #expect(try database.queryOne("SELECT id FROM notes WHERE id = 'absent'") == nil)
        #expect(throws: ApplicationSQLError.self) { try database.queryOne("DELETE FROM notes RETURNING id") }
    }
}

extension Task where Success == Never, Failure == Never {
    /// Yields until `condition` holds: for a waiter registered by another child task, observed through the
    /// database's own count rather than a sleep. Fails after a bounded number of yields.
    static func yieldUntil(_ condition: () -> Bool) async throws {
        for _ in 0..<100_000 where !condition() { await Task.yield() }
        try #require(condition())
    }
}
