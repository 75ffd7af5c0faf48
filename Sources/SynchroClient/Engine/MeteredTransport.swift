import Synchronization
import SynchroStore
import SynchroProtocol

/// The transport a cycle runs over: forwards every request unchanged and remembers what the exchanges
/// themselves do not surface — requests per endpoint, the last reply's `Retry-After` (``SyncError/http`` keeps
/// only status and code) and the last request body (a retry's work identity).
final class MeteredTransport: SyncTransport, Sendable {
    private struct State {
        var requests: [String: Int] = [:]
        var retryAfter: Duration?
        var lastBody: [UInt8] = []
    }

    private let base: any SyncTransport
    private let clock: ClientClock
    private let state = Mutex(State())

    /// `clock` is the store's: an HTTP-date `Retry-After` is measured from it, so tests schedule it.
    init(_ base: any SyncTransport, clock: ClientClock) {
        self.base = base
        self.clock = clock
    }

    func post(path: String, body: [UInt8]) throws -> SyncReply {
        state.withLock {
            $0.requests[path, default: 0] += 1
            $0.retryAfter = nil
            $0.lastBody = body
        }
        let reply = try base.post(path: path, body: body)
        let now = clock.nowMilliseconds()
        let retryAfter = reply.header("Retry-After").flatMap { RetryAfter.delay(parsing: $0, nowMilliseconds: now) }
        state.withLock { $0.retryAfter = retryAfter }
        return reply
    }

    /// Requests sent to `path` so far.
    func requests(_ path: String) -> Int { state.withLock { $0.requests[path] ?? 0 } }

    /// The exact body of the last request sent (whether or not a reply arrived).
    var lastRequestBody: [UInt8] { state.withLock { $0.lastBody } }

    /// `Retry-After` of the last reply, when it had a valid one.
    var lastRetryAfter: Duration? { state.withLock { $0.retryAfter } }
}
