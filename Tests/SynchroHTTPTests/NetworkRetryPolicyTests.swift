import Synchronization
import SynchroHTTP
import SynchroServer
import Testing

/// ``NetworkRetryPolicy`` over a real loopback transport (refused, DNS) and a scripted one (statuses): transient
/// failures and 429/502/503/504 are retried with 1, 2, 4 … s waits, announced before each wait; DNS and TLS fail at
/// once; the failure names the URL without query or credentials. The sleeper is recorded, never slept.
@Suite("Network retry policy")
struct NetworkRetryPolicyTests {
    /// Records waits and announced retries.
    final class Recorder: Sendable {
        let waits = Mutex<[Duration]>([])
        let retries = Mutex<[NetworkRetry]>([])

        func policy(retries count: Int) -> NetworkRetryPolicy {
            NetworkRetryPolicy(
                retries: count, sleep: { wait in self.waits.withLock { $0.append(wait) } },
                onRetry: { retry in self.retries.withLock { $0.append(retry) } })
        }
    }

    /// Answers each request with the next scripted outcome.
    final class ScriptedTransport: HTTPTransport {
        let script: Mutex<[Result<TransportResponse, TransportError>]>

        init(_ script: [Result<TransportResponse, TransportError>]) {
            self.script = Mutex(script)
        }

        func send(_ request: TransportRequest) throws(TransportError) -> TransportResponse {
            try script.withLock { $0.removeFirst() }.get()
        }
    }

    @Test("a refused loopback port is retried with 1, 2, 4 s waits, then fails naming connection_refused and the URL")
    func refusedIsRetried() throws {
        let server = HTTPServer(handler: EchoHandler())
        let port = try server.start()
        server.stop()
        let recorder = Recorder()
        let transport = try makeTransport(port: port)
        #expect(throws: NetworkFailure(
            url: "http://127.0.0.1:\(port)/ready", error: .connectionRefused, attempts: 4)) {
            try recorder.policy(retries: 3).send(.get("/ready?cursor=c"), via: transport, baseURL: transport.baseURL)
        }
        #expect(recorder.waits.withLock { $0 } == [.seconds(1), .seconds(2), .seconds(4)])
        let announced = recorder.retries.withLock { $0 }
        #expect(announced.map(\.attempt) == [1, 2, 3])
        #expect(announced.allSatisfy { $0.rule == "connection_refused" && $0.url == "http://127.0.0.1:\(port)/ready" })
        #expect(announced.first?.description
            == "attempt 1 of 4 failed: connection_refused at http://127.0.0.1:\(port)/ready; retrying in 1.0 s")
    }

    @Test("a name that does not resolve fails at once with dns_failure")
    func dnsIsNotRetried() throws {
        let recorder = Recorder()
        let transport = try CurlTransport(configuration: .init(baseURL: "http://seedkit-test.invalid"))
        do {
            _ = try recorder.policy(retries: 3).send(.get("/ready"), via: transport, baseURL: transport.baseURL)
            Issue.record("a .invalid name resolved")
        } catch {
            #expect(error.rule == "dns_failure")
            #expect(error.attempts == 1 && !error.retriesExhausted)
            #expect(error.description.contains("http://seedkit-test.invalid/ready"))
        }
        #expect(recorder.waits.withLock { $0 }.isEmpty)
    }

    @Test("503 then 200 returns the 200 after one announced retry; 503 throughout fails as http_503")
    func retryableStatuses() throws {
        let recorder = Recorder()
        let recovering = ScriptedTransport([
            .success(TransportResponse(status: 503)), .success(TransportResponse(status: 200)),
        ])
        let response = try recorder.policy(retries: 2).send(.get("/x"), via: recovering, baseURL: "http://h")
        #expect(response.status == 200)
        #expect(recorder.retries.withLock { $0 }.map(\.rule) == ["http_503"])
        let failing = ScriptedTransport(Array(repeating: .success(TransportResponse(status: 503)), count: 3))
        #expect(throws: NetworkFailure(url: "http://h/x", status: 503, attempts: 3)) {
            try Recorder().policy(retries: 2).send(.get("/x"), via: failing, baseURL: "http://h")
        }
        let refusal = ScriptedTransport([.success(TransportResponse(status: 401))])
        #expect(try Recorder().policy(retries: 2).send(.get("/x"), via: refusal, baseURL: "http://h").status == 401)
    }

    @Test("a failure's URL never shows user information, a query or a fragment")
    func displayURL() {
        #expect(NetworkFailure.displayURL("https://user:pw@example.invalid:8443/a/b?token=t#f")
            == "https://example.invalid:8443/a/b")
        let failure = NetworkFailure(url: "http://u:secret@h/sync/pull?cursor=secret", error: .timedOut)
        #expect(!failure.description.contains("secret"))
        #expect(failure.description == "the request timed out: http://h/sync/pull (timeout)")
    }

    @Test("each kind has its rule", arguments: [
        (TransportError.connectionRefused, "connection_refused"), (.dnsFailure, "dns_failure"),
        (.tls, "tls_failure"), (.timedOut, "timeout"), (.connectionReset, "connection_reset"),
    ])
    func rules(error: TransportError, rule: String) {
        #expect(error.rule == rule)
    }
}
