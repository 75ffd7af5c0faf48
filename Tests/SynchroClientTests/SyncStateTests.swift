import Foundation
import SynchroClient
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// The client state machine (`spec/wire-protocol.md` §10): the transition table, the backoff return rule, and the
/// states a real cycle goes through against the reference server.
@Suite("Client state machine")
struct SyncStateTests {
    /// §10.2, copied from the spec table (not from the implementation).
    static let legal: [SyncState: Set<SyncState>] = [
        .uninitialized: [.localReady, .error, .stopped],
        .localReady: [.connecting, .error, .stopped],
        .connecting: [.schemaApplying, .ready, .backoff, .error, .stopped],
        .schemaApplying: [.ready, .rebuilding, .error, .stopped],
        .ready: [.connecting, .pushing, .pulling, .rebuilding, .error, .stopped],
        .pushing: [.pushing, .ready, .pulling, .connecting, .backoff, .error, .stopped],
        .pulling: [.pulling, .ready, .rebuilding, .connecting, .backoff, .error, .stopped],
        .rebuilding: [.rebuilding, .ready, .connecting, .backoff, .error, .stopped],
        .backoff: [.connecting, .pushing, .pulling, .rebuilding, .error, .stopped],
        .error: [.localReady, .stopped],
        .stopped: [.localReady],
    ]

    /// A path from `uninitialized` to every state, so each pair can be tried from a machine really in `from`.
    static let paths: [SyncState: [SyncState]] = [
        .uninitialized: [],
        .localReady: [.localReady],
        .connecting: [.localReady, .connecting],
        .schemaApplying: [.localReady, .connecting, .schemaApplying],
        .ready: [.localReady, .connecting, .ready],
        .pushing: [.localReady, .connecting, .ready, .pushing],
        .pulling: [.localReady, .connecting, .ready, .pulling],
        .rebuilding: [.localReady, .connecting, .ready, .rebuilding],
        .backoff: [.localReady, .connecting, .backoff],
        .error: [.error],
        .stopped: [.stopped],
    ]

    static func machine(in state: SyncState) throws -> SyncStateMachine {
        var machine = SyncStateMachine()
        for step in paths[state] ?? [] { try machine.transition(to: step) }
        return machine
    }

    @Test("every pair of the §10.2 table is legal and every other pair is refused, leaving the state unchanged",
          arguments: SyncState.allCases)
    func transitionTable(_ from: SyncState) throws {
        for target in SyncState.allCases {
            var machine = try Self.machine(in: from)
            // From backoff the network states are legal only as the interrupted one (here: connecting).
            let legal = Self.legal[from]?.contains(target) == true
                && !(from == .backoff && [.pushing, .pulling, .rebuilding].contains(target))
            if legal {
                try machine.transition(to: target)
                #expect(machine.state == target, "\(from.rawValue) → \(target.rawValue)")
            } else {
                #expect(throws: IllegalTransition(from: from, to: target), "\(from.rawValue) → \(target.rawValue)") {
                    try machine.transition(to: target)
                }
                #expect(machine.state == from)
            }
        }
    }

    @Test("backoff returns only to the interrupted state or to connecting", arguments: [
        SyncState.pushing, .pulling, .rebuilding,
    ])
    func backoffReturn(_ interrupted: SyncState) throws {
        var machine = try Self.machine(in: interrupted)
        try machine.transition(to: .backoff)
        #expect(machine.interrupted == interrupted)
        for other in [SyncState.pushing, .pulling, .rebuilding] where other != interrupted {
            #expect(throws: IllegalTransition(from: .backoff, to: other)) { try machine.transition(to: other) }
        }
        var reconnecting = machine
        try reconnecting.transition(to: .connecting)
        #expect(reconnecting.interrupted == nil)
        try machine.transition(to: interrupted)
        #expect(machine.state == interrupted && machine.interrupted == nil)
    }

    @Test("the spec's explicit examples are illegal", arguments: [
        (SyncState.stopped, SyncState.pulling), (.error, .ready), (.localReady, .backoff),
    ])
    func explicitExamples(from: SyncState, to: SyncState) throws {
        var machine = try Self.machine(in: from)
        #expect(throws: IllegalTransition(from: from, to: to)) { try machine.transition(to: to) }
        #expect(IllegalTransition(from: from, to: to).description.contains("\(from.rawValue) → \(to.rawValue)"))
    }

    // MARK: - A cycle against the reference server

    /// One cycle value over a loopback server, run several times; waits return at once.
    final class CycleFixture {
        let fixture: SyncFixture
        let cycle: SyncCycle

        init(maxAttempts: Int = 5) throws {
            fixture = try SyncFixture(rows: 60, pageLimit: 40)
            cycle = SyncCycle(
                context: fixture.context, configuration: .init(retry: SyncRetryPolicy(maxAttempts: maxAttempts)),
                delay: { _ in }, random: RandomSource { 0 })
        }
    }

    @Test("a fresh cycle connects, applies the schema, rebuilds and pulls through the states of §10.3")
    func freshCycleStates() throws {
        let run = try CycleFixture()
        #expect(run.cycle.status.state == .uninitialized)
        let summary = try run.cycle.run()
        #expect(summary.states == [
            .uninitialized, .localReady, .connecting, .schemaApplying, .ready, .rebuilding, .ready, .pulling, .ready,
        ])
        #expect(run.cycle.status.state == .ready)

        // The same cycle runs again from `ready`: a steady cycle reconnects and pulls.
        try run.fixture.store.execute(
            "INSERT INTO notes (id, owner_id, title, pinned, updated_at) VALUES (?, 'alice', 'S', 0, ?)",
            [.text("note-state-1"), .text("2026-01-02T03:04:05.000Z")])
        #expect(try run.cycle.run().states == [.ready, .connecting, .ready, .pushing, .ready, .pulling, .ready])
    }

    @Test("a retried pull passes through backoff and resumes pulling")
    func retryThroughBackoff() throws {
        let run = try CycleFixture()
        _ = try run.cycle.run()
        try run.fixture.server.engine.inject(.rejectRequests(route: "/sync/pull", count: 1, status: 503))
        let states = try run.cycle.run().states
        #expect(states == [.ready, .connecting, .ready, .pulling, .backoff, .pulling, .ready])
    }

    @Test("retries used up leave the cycle in backoff; the next run resumes by reconnecting")
    func exhaustedRetriesStayInBackoff() throws {
        let run = try CycleFixture(maxAttempts: 1)
        _ = try run.cycle.run()
        try run.fixture.server.engine.inject(.rejectRequests(route: "/sync/pull", count: 1, status: 429))
        #expect(throws: SyncCycleError.retriesExhausted(phase: .pull, attempts: 1, status: 429)) {
            try run.cycle.run()
        }
        #expect(run.cycle.status.state == .backoff)
        #expect(run.cycle.status.interruptedState == .pulling)
        #expect(try run.cycle.run().states == [.backoff, .connecting, .ready, .pulling, .ready])
    }

    /// A refusal of the dispatch table is stored (issue #16): the next run is refused until the explicit `retry`
    /// acknowledgement, and only then starts again from `local_ready` (§10.2: a timer or a bare rerun cannot).
    @Test("a non-retryable failure leaves the cycle in error; after the explicit retry it starts from local_ready")
    func errorThenRestart() throws {
        let run = try CycleFixture()
        _ = try run.cycle.run()
        run.fixture.transport.setEdit { path, reply in
            guard path == "/sync/connect" else { return reply }
            let body = #"{"error":{"code":"auth_required","message":"m","retryable":false}}"#
            return SyncReply(status: 401, body: Array(body.utf8))
        }
        let failure = try #require(throws: SyncCycleError.self) { try run.cycle.run() }
        #expect(failure.isAuthFailure)
        #expect(run.cycle.status.state == .error)

        run.fixture.transport.setEdit(nil)
        #expect(throws: SyncCycleError.blocked(operation: "connect", code: "auth_required", recoveryAction: "retry")) {
            try run.cycle.run()
        }
        #expect(run.cycle.status.state == .error)
        #expect(try run.cycle.acknowledgeBlockingError())
        #expect(try run.cycle.run().states == [.error, .localReady, .connecting, .ready, .pulling, .ready])
    }
}
