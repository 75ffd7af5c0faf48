import Foundation
import Synchronization
import SynchroClient
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// A transport over a loopback ``RunningServer`` that keeps reply headers (`Retry-After`) and records the path
/// and body of every request, so tests can hold a cycle to its request budget; `before` runs ahead of each
/// request (to inject a server fault in the middle of a cycle).
final class CycleTransport: SyncTransport, Sendable {
    let server: RunningServer
    private let sent = Mutex<[(path: String, body: [UInt8])]>([])
    private let hook = Mutex<(@Sendable (String, Int) throws -> Void)?>(nil)

    init(server: RunningServer) {
        self.server = server
    }

    /// Every path posted so far, in order.
    var paths: [String] { sent.withLock { $0.map(\.path) } }

    /// Every body posted to `path` so far, in order.
    func bodies(_ path: String) -> [[UInt8]] { sent.withLock { $0.filter { $0.path == path }.map(\.body) } }

    func reset() {
        sent.withLock { $0 = [] }
    }

    /// Installs a hook called with the path and the 1-based count of requests to that path so far.
    func before(_ body: @escaping @Sendable (String, Int) throws -> Void) {
        hook.withLock { $0 = body }
    }

    func post(path: String, body: [UInt8]) throws -> SyncReply {
        let count = sent.withLock { sent in
            sent.append((path, body))
            return sent.filter { $0.path == path }.count
        }
        try hook.withLock { $0 }?(path, count)
        let reply = try server.post(path, bytes: body, as: "alice")
        return SyncReply(
            status: reply.status, headers: reply.headers.map { (name: $0.0, value: $0.1) }, body: reply.body)
    }
}

/// Records what a cycle would have slept and every event it emitted, instead of sleeping.
final class CycleRecorder: Sendable {
    private let state = Mutex<(delays: [Duration], events: [SyncEvent])>(([], []))

    var delays: [Duration] { state.withLock { $0.delays } }
    var events: [SyncEvent] { state.withLock { $0.events } }

    func cycle(_ context: SyncContext) -> SyncCycle {
        SyncCycle(
            context: context, delay: { delay in self.state.withLock { $0.delays.append(delay) } },
            events: { event in self.state.withLock { $0.events.append(event) } })
    }
}

@Suite("Sync cycle")
struct SyncCycleTests {
    let fixture: SyncFixture
    let transport: CycleTransport
    let recorder = CycleRecorder()

    init() throws {
        fixture = try SyncFixture(rows: 120, pageLimit: 40)
        transport = CycleTransport(server: fixture.server)
    }

    var context: SyncContext { fixture.context(over: transport) }

    func runCycle() throws -> SyncSummary {
        try recorder.cycle(context).run()
    }

    @Test("a fresh cycle connects, rebuilds both scopes and verifies them, then pulls to the head")
    func freshCycle() throws {
        let summary = try runCycle()
        let scopes = try fixture.scopes()
        #expect(scopes.count == 2)
        #expect(summary.scopesRebuilt.sorted() == scopes.map(\.id))
        #expect(summary.scopesVerified == scopes.map(\.id))
        #expect(scopes.allSatisfy { $0.cursor != nil && $0.checksum != nil })
        #expect(summary.connectRequests == 1)
        #expect(summary.rebuildRequests >= 2)
        #expect(summary.pullRequests >= 1)
        #expect(summary.rowsApplied > 0)
        #expect(summary.rowsApplied == Int(try fixture.count("SELECT count(*) FROM _synchro_scope_rows")))
        #expect(summary.retries == 0 && recorder.delays.isEmpty)
        #expect(transport.paths.first == "/sync/connect" && transport.paths.last == "/sync/pull")
        #expect(recorder.events.first == .phaseStarted(.connect))
        #expect(recorder.events.last == .phaseFinished(.pull))
        #expect(recorder.events.contains(.phaseStarted(.rebuild)))
    }

    @Test("a steady cycle costs one connect and one pull, and verifies without rebuilding")
    func steadyCycle() throws {
        _ = try runCycle()
        transport.reset()
        let summary = try runCycle()
        #expect(transport.paths == ["/sync/connect", "/sync/pull"])
        #expect(summary.totalRequests == 2)
        #expect(summary.scopesRebuilt.isEmpty)
        #expect(summary.rowsApplied == 0)
        #expect(summary.mutationsPushed == 0)
        #expect(summary.scopesVerified == (try fixture.scopes()).map(\.id))
    }

    @Test("request budget of a first cycle: one connect, one rebuild request per page of each scope, one pull")
    func firstCycleBudget() throws {
        let summary = try runCycle()
        var pages = 0
        for scope in try fixture.scopes() {
            let rows = try fixture.count("SELECT count(*) FROM _synchro_scope_rows WHERE scope_id = '\(scope.id)'")
            // The final page carries the last rows: n rows take ceil(n / limit) pages, an empty scope one.
            pages += max(1, Int((rows + 39) / 40))
        }
        #expect(summary.connectRequests == 1)
        #expect(summary.pullRequests == 1)
        #expect(summary.pushRequests == 0)
        #expect(summary.rebuildRequests == pages)
        #expect(transport.paths.filter { $0 == "/sync/rebuild" }.count == pages)
    }

    @Test("a local write is pushed, accepted and pulled back in the next cycle")
    func localWrite() throws {
        _ = try runCycle()
        try fixture.store.execute(
            "INSERT INTO notes (id, owner_id, title, pinned, updated_at) VALUES (?, 'alice', 'Hello', 0, ?)",
            [.text("note-cycle-1"), .text("2026-01-02T03:04:05.000Z")])
        transport.reset()
        let summary = try runCycle()
        #expect(transport.paths == ["/sync/connect", "/sync/push", "/sync/pull"])
        #expect(summary.mutationsPushed == 1)
        #expect(summary.mutationsAccepted == 1)
        #expect(summary.mutationsRejected == 0)
        #expect(summary.scopesRebuilt.isEmpty)
        #expect(try fixture.count("SELECT count(*) FROM _synchro_pending_changes WHERE lifecycle_state = 'sealed'")
            == 0)
        #expect(try fixture.count("SELECT count(*) FROM notes WHERE id = 'note-cycle-1'") == 1)
        #expect(summary.scopesVerified == (try fixture.scopes()).map(\.id))
    }

    @Test("a 503 on pull is retried after the recorded Retry-After, with the same request")
    func retryAfter() throws {
        _ = try runCycle()
        try fixture.server.engine.inject(.rejectRequests(route: "/sync/pull", count: 1, status: 503))
        transport.reset()
        let summary = try runCycle()
        #expect(transport.paths == ["/sync/connect", "/sync/pull", "/sync/pull"])
        #expect(recorder.delays == [.seconds(5)])
        #expect(summary.retries == 1)
        #expect(summary.pullRequests == 2)
        let pulls = transport.bodies("/sync/pull")
        #expect(pulls.count == 2 && pulls[0] == pulls[1])
        #expect(recorder.events.contains(.retryScheduled(phase: .pull, attempt: 1, status: 503, delay: .seconds(5))))
    }

    @Test("a 429 on push is retried with the same sealed bytes after the recorded Retry-After")
    func pushRetry() throws {
        _ = try runCycle()
        try fixture.store.execute(
            "INSERT INTO notes (id, owner_id, title, pinned, updated_at) VALUES (?, 'alice', 'Retry', 1, ?)",
            [.text("note-cycle-2"), .text("2026-01-02T03:04:05.000Z")])
        try fixture.server.engine.inject(.rejectRequests(route: "/sync/push", count: 1, status: 429))
        transport.reset()
        let summary = try runCycle()
        #expect(transport.paths == ["/sync/connect", "/sync/push", "/sync/push", "/sync/pull"])
        let pushes = transport.bodies("/sync/push")
        #expect(pushes.count == 2 && pushes[0] == pushes[1])
        #expect(recorder.delays == [.seconds(5)])
        #expect(summary.mutationsAccepted == 1)
    }

    @Test("an expired rebuild session restarts that scope with a new attempt and still verifies")
    func rebuildRestart() throws {
        let server = fixture.server
        transport.before { path, count in
            if path == "/sync/rebuild" && count == 2 { try server.engine.inject(.expireRebuildSessions) }
        }
        let summary = try runCycle()
        let scopes = try fixture.scopes()
        #expect(summary.scopesRebuilt.sorted() == scopes.map(\.id))
        #expect(scopes.allSatisfy { $0.cursor != nil && $0.checksum != nil })
        #expect(try fixture.count("SELECT count(*) FROM _synchro_rebuild_attempts") == 0)
        // The refused continuation is followed by a first page (null cursor) of a new attempt.
        let rebuilds = transport.bodies("/sync/rebuild").map { (try? StrictJSONParser().parse($0))?.objectValue }
        let ids = rebuilds.compactMap { $0?["rebuild_id"]?.stringValue }
        #expect(Set(ids).count > scopes.count)
        // A restart is not a retry: nothing waited.
        #expect(recorder.delays.isEmpty)
    }

    @Test("a generation expired in the middle of a cycle reconnects and finishes the cycle")
    func generationExpired() throws {
        _ = try runCycle()
        let server = fixture.server
        let clientID = fixture.store.configuration.clientID
        transport.before { path, count in
            if path == "/sync/pull" && count == 1 {
                try server.engine.inject(.expireClientGeneration(user: "alice", client: clientID))
            }
        }
        transport.reset()
        let summary = try runCycle()
        // The renewed generation invalidates the cursors, so the scopes are rebuilt before the final pull.
        #expect(Array(transport.paths.prefix(3)) == ["/sync/connect", "/sync/pull", "/sync/connect"])
        #expect(transport.paths.last == "/sync/pull")
        #expect(summary.connectRequests == 2)
        #expect(summary.scopesVerified == (try fixture.scopes()).map(\.id))
    }

    @Test("retries stop after the policy's attempts with a typed error")
    func retriesExhausted() throws {
        _ = try runCycle()
        try fixture.server.engine.inject(.rejectRequests(route: "/sync/pull", count: 10, status: 429))
        let cycle = SyncCycle(
            context: context, configuration: .init(retry: SyncRetryPolicy(maxAttempts: 3)), delay: { _ in })
        #expect(throws: SyncCycleError.retriesExhausted(phase: .pull, attempts: 3, status: 429)) {
            try cycle.run()
        }
    }

    @Test("Retry-After is the minimum delay; backoff doubles from 1 s to 16 s plus up to half as much jitter",
          arguments: [
        ("5", 1, 0.0, 5.0), ("2.5", 1, 0.0, 2.5), ("0", 3, 0.0, 4.0), ("05", 1, 0.0, 1.0), ("5.", 1, 0.0, 1.0),
        ("1", 9, 0.0, 16.0), ("0", 1, 1.0, 1.5), ("0", 4, 0.5, 10.0), ("0", 5, 1.0, 24.0), ("0", 40, 1.0, 24.0),
        ("5", 3, 0.25, 5.0), ("20", 5, 1.0, 24.0), ("30", 5, 1.0, 30.0),
    ])
    func retryPolicy(header: String, attempt: Int, random: Double, seconds: Double) {
        let policy = SyncRetryPolicy()
        let delay = policy.delay(
            afterAttempt: attempt, retryAfter: RetryAfter.delay(parsing: header, nowMilliseconds: 0), random: random)
        #expect(delay == .milliseconds(Int64(seconds * 1000)))
    }

    @Test("the retry deadline is now plus the delay rounded up to whole milliseconds, saturating")
    func retryDeadline() {
        #expect(SyncRetryPolicy.deadline(now: 1_000, delay: .milliseconds(1_250)) == 2_250)
        #expect(SyncRetryPolicy.deadline(now: 1_000, delay: .microseconds(1_001)) == 1_002)
        #expect(SyncRetryPolicy.deadline(now: 1_000, delay: .zero) == 1_000)
        #expect(SyncRetryPolicy.deadline(now: Int64.max - 10, delay: .seconds(1)) == Int64.max)
        #expect(SyncRetryPolicy.deadline(now: 0, delay: .seconds(Int64.max)) == Int64.max)
    }
}
