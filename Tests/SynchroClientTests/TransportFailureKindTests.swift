import Synchronization
import SynchroClient
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// A host transport names why no reply arrived (``SyncTransportFailure``, docs/cli.md "Network failures"): a
/// transient kind is retried and carried by the retry event and by `retriesExhausted`; a configuration kind (DNS,
/// TLS) fails the cycle at once, without a wait or a durable retry record.
@Suite("Transport failure kinds")
struct TransportFailureKindTests {
    /// Fails the next `count` requests of `path` with `failure`, then forwards to the reference server.
    final class FailingTransport: SyncTransport, Sendable {
        let base: CycleTransport
        let failures = Mutex<[String: (SyncTransportFailure, Int)]>([:])

        init(base: CycleTransport) {
            self.base = base
        }

        func fail(_ path: String, with failure: SyncTransportFailure, times: Int) {
            failures.withLock { $0[path] = (failure, times) }
        }

        func post(path: String, body: [UInt8]) throws -> SyncReply {
            let failure = failures.withLock { table -> SyncTransportFailure? in
                guard let (failure, left) = table[path], left > 0 else { return nil }
                table[path] = (failure, left - 1)
                return failure
            }
            if let failure { throw failure }
            return try base.post(path: path, body: body)
        }
    }

    final class EventLog: Sendable {
        let events = Mutex<[SyncEvent]>([])
        func append(_ event: SyncEvent) { events.withLock { $0.append(event) } }
        var all: [SyncEvent] { events.withLock { $0 } }
    }

    let fixture: SyncFixture
    let transport: FailingTransport
    let waits = WaitLog()
    let events = EventLog()
    static let refused = SyncTransportFailure(
        rule: "connection_refused", message: "connection refused: http://127.0.0.1:9/sync/pull", isRetryable: true)
    static let dns = SyncTransportFailure(
        rule: "dns_failure", message: "the host name does not resolve: http://h.invalid/sync/pull", isRetryable: false)

    init() throws {
        fixture = try SyncFixture(rows: 20, pageLimit: 40)
        transport = FailingTransport(base: CycleTransport(server: fixture.server))
    }

    func cycle(maxAttempts: Int = 4) -> SyncCycle {
        let (waits, events) = (waits, events)
        return SyncCycle(
            context: fixture.context(over: transport),
            configuration: .init(retry: SyncRetryPolicy(maxAttempts: maxAttempts)),
            delay: { waits.append(Wait(delay: $0, record: nil, requests: 0)) }, events: events.append,
            random: RandomSource { 0 })
    }

    @Test("a DNS failure fails the cycle at once: no wait, no retry event, no durable record")
    func configurationKindIsNotRetried() throws {
        _ = try cycle().run()
        transport.fail("/sync/pull", with: Self.dns, times: 5)
        #expect(throws: SyncCycleError.sync(phase: .pull, .transport(Self.dns))) { try cycle().run() }
        #expect(waits.all.isEmpty)
        #expect(try fixture.store.backoff() == nil)
        #expect(SyncCycleError.sync(phase: .pull, .transport(Self.dns)).code == "dns_failure")
    }

    @Test("a refused connection is retried; the retry event and the exhausted error carry its kind")
    func transientKindIsRetriedAndNamed() throws {
        _ = try cycle().run()
        transport.fail("/sync/pull", with: Self.refused, times: 2)
        #expect(try cycle().run().retries == 2)
        let retries = events.all.compactMap { event -> SyncTransportFailure? in
            if case .retryScheduled(.pull, _, nil, _, let failure) = event { return failure }
            return nil
        }
        #expect(retries == [Self.refused, Self.refused])

        transport.fail("/sync/pull", with: Self.refused, times: 5)
        let exhausted = SyncCycleError.retriesExhausted(phase: .pull, attempts: 2, status: nil, failure: Self.refused)
        #expect(throws: exhausted) { try cycle(maxAttempts: 2).run() }
    }
}
