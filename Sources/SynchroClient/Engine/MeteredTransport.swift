import Synchronization
import SynchroProtocol

/// The transport a cycle runs over: forwards every request unchanged and remembers what the exchanges
/// themselves do not surface — requests per endpoint, the last reply's `Retry-After` (``SyncError/http`` keeps
/// only status and code) and how many rows the last 200 pull or rebuild page carried.
final class MeteredTransport: SyncTransport, Sendable {
    private struct State {
        var requests: [String: Int] = [:]
        var retryAfter: Duration?
        var pageRows = 0
        var lastBody: [UInt8] = []
    }

    private let base: any SyncTransport
    private let state = Mutex(State())

    init(_ base: any SyncTransport) {
        self.base = base
    }

    func post(path: String, body: [UInt8]) throws -> SyncReply {
        state.withLock {
            $0.requests[path, default: 0] += 1
            $0.retryAfter = nil
            $0.pageRows = 0
            $0.lastBody = body
        }
        let reply = try base.post(path: path, body: body)
        let retryAfter = reply.header("Retry-After").flatMap(SyncRetryPolicy.parseRetryAfter)
        let rows = reply.status == 200 ? Self.rowCount(path: path, body: reply.body) : 0
        state.withLock {
            $0.retryAfter = retryAfter
            $0.pageRows = rows
        }
        return reply
    }

    /// Requests sent to `path` so far.
    func requests(_ path: String) -> Int { state.withLock { $0.requests[path] ?? 0 } }

    /// The exact body of the last request sent (whether or not a reply arrived).
    var lastRequestBody: [UInt8] { state.withLock { $0.lastBody } }

    /// `Retry-After` of the last reply, when it had a valid one.
    var lastRetryAfter: Duration? { state.withLock { $0.retryAfter } }

    /// Rows of the last 200 pull (`changes`) or rebuild (`records`) page; read only after the page committed.
    var lastPageRows: Int { state.withLock { $0.pageRows } }

    private static func rowCount(path: String, body: [UInt8]) -> Int {
        let member: String
        switch path {
        case "/sync/pull": member = "changes"
        case "/sync/rebuild": member = "records"
        default: return 0
        }
        // A second parse of the page; an unparsable body fails validation in the applier anyway.
        return (try? StrictJSONParser().parse(body))?.objectValue?[member]?.arrayValue?.count ?? 0
    }
}
