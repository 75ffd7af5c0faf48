import Foundation
import Synchronization
import SynchroClient
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// Durable retry metadata in `_synchro_backoff` (`spec/client-store.md` §4.11, §11, §12; `spec/wire-protocol.md`
/// §10.3): every retryable failure is recorded before the wait, success clears it, and a restarted engine on the
/// same file waits for the stored deadline. Time is a manual clock that moves only when a cycle waits.
@Suite("Durable backoff")
struct DurableBackoffTests {
    let clock = ManualClientClock()
    let fixture: SyncFixture
    let transport: CycleTransport
    /// What each wait saw.
    let waits = WaitLog()

    init() throws {
        fixture = try SyncFixture(rows: 60, pageLimit: 40, clock: clock.clock)
        transport = CycleTransport(server: fixture.server)
    }

    var context: SyncContext { fixture.context(over: transport) }

    /// A cycle whose waits advance the clock and record what the store held at that moment; jitter draws
    /// `random`.
    func cycle(maxAttempts: Int = 5, random: Double = 0.5) -> SyncCycle {
        let (store, transport, clock, waits) = (fixture.store, transport, clock, waits)
        return SyncCycle(
            context: context, configuration: .init(retry: SyncRetryPolicy(maxAttempts: maxAttempts)),
            delay: { delay in
                let record = try? store.backoff()
                waits.append(Wait(delay: delay, record: record ?? nil, requests: transport.paths.count))
                clock.advance(by: delay)
            },
            random: RandomSource { random })
    }

    var recordedWaits: [Wait] { waits.all }

    @Test("a retryable pull failure is stored before the wait with the upstream deadline, and success clears it")
    func pullFailureRecorded() throws {
        _ = try cycle().run()
        try fixture.server.engine.inject(.rejectRequests(route: "/sync/pull", count: 1, status: 503))
        transport.reset()
        let failedAt = clock.milliseconds

        let summary = try cycle().run()

        #expect(transport.paths == ["/sync/connect", "/sync/pull", "/sync/pull"])
        #expect(summary.retries == 1)
        let wait = try #require(recordedWaits.first)
        // Retry-After 5 s beats 1 s + 0.25 s of jitter.
        #expect(wait.delay == .seconds(5))
        #expect(wait.record == SyncBackoff(
            resumeState: .pulling, classification: .http503, attemptCount: 1,
            nextRetryAtMilliseconds: failedAt + 5_000))
        #expect(try fixture.store.backoff() == nil)
    }

    @Test("a new engine on the same file waits for the stored deadline before sending anything")
    func restartHonoursDeadline() throws {
        _ = try cycle().run()
        try fixture.server.engine.inject(.rejectRequests(route: "/sync/pull", count: 2, status: 429))
        #expect(throws: SyncCycleError.retriesExhausted(phase: .pull, attempts: 2, status: 429)) {
            try cycle(maxAttempts: 2).run()
        }
        let stored = try #require(try fixture.store.backoff())
        #expect(stored.resumeState == .pulling && stored.classification == .http429 && stored.attemptCount == 2)
        #expect(stored.nextRetryAtMilliseconds == clock.milliseconds + 5_000)

        // The process dies; a new engine opens the same file 2 s later.
        try fixture.storeFixture.reopen()
        clock.advance(by: .seconds(2))
        transport.reset()
        waits.reset()

        let summary = try cycle().run()

        let first = try #require(recordedWaits.first)
        #expect(first.requests == 0)
        #expect(first.delay == .seconds(3))
        #expect(first.record == stored)
        #expect(clock.milliseconds == stored.nextRetryAtMilliseconds)
        #expect(transport.paths == ["/sync/connect", "/sync/pull"])
        #expect(summary.retries == 1)
        #expect(try fixture.store.backoff() == nil)
    }

    @Test("a deadline that has passed is not waited for")
    func passedDeadline() throws {
        _ = try cycle().run()
        try fixture.server.engine.inject(.rejectRequests(route: "/sync/pull", count: 1, status: 503))
        #expect(throws: SyncCycleError.self) { try cycle(maxAttempts: 1).run() }
        clock.advance(by: .seconds(6))
        waits.reset()
        _ = try cycle().run()
        #expect(recordedWaits.isEmpty)
        #expect(try fixture.store.backoff() == nil)
    }

    @Test("the attempt count continues for the same request across cycles and restarts for other work")
    func attemptCount() throws {
        _ = try cycle().run()
        try fixture.server.engine.inject(.rejectRequests(route: "/sync/pull", count: 3, status: 503))
        var records: [SyncBackoff] = []
        for _ in 0..<3 {
            #expect(throws: SyncCycleError.retriesExhausted(phase: .pull, attempts: 1, status: 503)) {
                try cycle(maxAttempts: 1, random: 1).run()
            }
            records.append(try #require(try fixture.store.backoff()))
        }
        #expect(records.map(\.attemptCount) == [1, 2, 3])
        // Attempt 3 waits max(4 s + 2 s of jitter, Retry-After 5 s).
        #expect(records[2].nextRetryAtMilliseconds == clock.milliseconds + 6_000)

        try fixture.server.engine.inject(.rejectRequests(route: "/sync/connect", count: 1, status: 429))
        clock.advance(by: .seconds(6))
        #expect(throws: SyncCycleError.retriesExhausted(phase: .connect, attempts: 1, status: 429)) {
            try cycle(maxAttempts: 1).run()
        }
        let connecting = try #require(try fixture.store.backoff())
        #expect(connecting.resumeState == .connecting && connecting.attemptCount == 1)
        // The connect's success clears its record.
        clock.advance(by: .seconds(5))
        _ = try cycle().run()
        #expect(try fixture.store.backoff() == nil)
    }

    @Test("a lost push response is recorded under the batch and cleared when the batch is reconciled")
    func lostPushResponse() throws {
        _ = try cycle().run()
        try fixture.store.execute(
            "INSERT INTO notes (id, owner_id, title, pinned, updated_at) VALUES (?, 'alice', 'Lost', 0, ?)",
            [.text("note-lost-1"), .text("2026-01-02T03:04:05.000Z")])
        // The server commits the push; its reply dies after the header fields (`lose_response`), on the reused
        // keep-alive connection, and libcurl reports the failed transfer.
        try fixture.server.engine.inject(.loseResponse(route: "/sync/push", count: 1))
        let failedAt = clock.milliseconds

        let summary = try cycle().run()

        let wait = try #require(recordedWaits.first)
        #expect(wait.delay == .milliseconds(1_250))
        #expect(wait.record == SyncBackoff(
            resumeState: .pushing, classification: .network, attemptCount: 1,
            nextRetryAtMilliseconds: failedAt + 1_250))
        #expect(summary.mutationsAccepted == 1)
        let pushes = transport.bodies("/sync/push")
        #expect(pushes.count == 2 && pushes[0] == pushes[1])
        #expect(try fixture.store.backoff() == nil)
    }

    @Test("a connect that changes the installed scopes retires a saved pull retry; an unchanged one keeps it")
    func connectRetiresStalePull() throws {
        _ = try cycle().run()
        try fixture.server.engine.inject(.rejectRequests(route: "/sync/pull", count: 1, status: 503))
        #expect(throws: SyncCycleError.self) { try cycle(maxAttempts: 1).run() }
        try ConnectExchange(context: context).run()
        #expect(try fixture.store.backoff()?.resumeState == .pulling)

        try fixture.server.engine.inject(.reassignScopes(user: "alice", grant: [], revoke: ["user:alice"]))
        try ConnectExchange(context: context).run()
        #expect(try fixture.store.backoff() == nil)
    }
}

/// One wait of a cycle: its duration, the retry record stored at that moment and how many requests had been sent.
struct Wait: Sendable {
    let delay: Duration
    let record: SyncBackoff?
    let requests: Int
}

/// The waits of the cycles of one test, in order.
final class WaitLog: Sendable {
    private let waits = Mutex<[Wait]>([])

    var all: [Wait] { waits.withLock { $0 } }

    func append(_ wait: Wait) {
        waits.withLock { $0.append(wait) }
    }

    func reset() {
        waits.withLock { $0 = [] }
    }
}
