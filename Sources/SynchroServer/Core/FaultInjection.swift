import SQLiteKit
import Synchronization
import SynchroProtocol

/// Faults a test (or an operator dry-running a pipeline) schedules on a running server, so that
/// clients meet every failure the protocol defines without sleeps or real outages.
public enum ServerFault: Sendable, Equatable {
    /// Process the next `count` requests of `route` fully (commit included), then lose the response
    /// in transit: its status line and header fields are sent, the connection is aborted before the
    /// body (``HTTPResponse/losingBody()``). Every client sees a failed transfer, also on a reused
    /// keep-alive connection, where a connection closed without any response octet would make libcurl
    /// silently resend the request and hide the loss.
    case loseResponse(route: String, count: Int)
    /// Answer the next `count` requests of `route` with 429 `retry_later` (or 503
    /// `temporary_unavailable` when `status` is 503) before any work, with `Retry-After`.
    case rejectRequests(route: String, count: Int, status: Int)
    /// Answer the next `count` requests of `route` as a reverse proxy in front of the server would when the
    /// server is unreachable: `status` (502, 503 or 504) with an HTML body and no protocol envelope, and a
    /// `Retry-After` of `retryAfter` (none, delta-seconds, or an HTTP-date that many seconds ahead).
    case proxyError(route: String, count: Int, status: Int, retryAfter: ProxyRetryAfter)
    /// Stop materializing captured writes: pulls and rebuilds of clients with accepted writes get
    /// 503 `capture_pending` until ``resumeMaterialization``.
    case pauseMaterialization
    /// Materialize everything captured so far and continue after every write.
    case resumeMaterialization
    /// Every rebuild session of the server becomes older than 24 hours.
    case expireRebuildSessions
    /// The client's generation moves on: its next push, pull or rebuild gets 409
    /// `client_generation_expired` and it must reconnect.
    case expireClientGeneration(user: String, client: String)
    /// The client is irreversibly retired: 409 `client_retired` from now on.
    case retireClient(user: String, client: String)
    /// The membership contract changes: every cursor becomes stale and its scope is rebuilt.
    case changeMembership
    /// Grants and revokes scopes for a user; connect and pull report the assignment change.
    case reassignScopes(user: String, grant: [String], revoke: [String])
    /// The next terminal pull page that carries `scope` reports a wrong checksum for it.
    case corruptChecksum(scope: String)
}

/// The `Retry-After` a proxy fault sends.
public enum ProxyRetryAfter: Sendable, Equatable {
    case none
    /// `Retry-After: N`.
    case seconds(Int)
    /// `Retry-After: <IMF-fixdate N seconds after the server's clock>`.
    case httpDate(secondsAhead: Int)
}

/// The plan of pending request-level faults.
struct FaultPlan {
    var lose: [String: Int] = [:]
    var reject: [String: (count: Int, status: Int)] = [:]
    var proxy: [String: (count: Int, status: Int, retryAfter: ProxyRetryAfter)] = [:]

    /// The proxy answer to give the next request of `route` instead of the server's, consuming one occurrence.
    mutating func nextProxyError(for route: String) -> (status: Int, retryAfter: ProxyRetryAfter)? {
        guard let pending = proxy[route], pending.count > 0 else { return nil }
        proxy[route] = (pending.count - 1, pending.status, pending.retryAfter)
        return (pending.status, pending.retryAfter)
    }

    /// The fault to apply to the next request of `route`, consuming one occurrence.
    mutating func next(for route: String) -> (rejectStatus: Int?, loseResponse: Bool) {
        var rejectStatus: Int?
        if let pending = reject[route], pending.count > 0 {
            reject[route] = (pending.count - 1, pending.status)
            rejectStatus = pending.status
        }
        var loseResponse = false
        if rejectStatus == nil, let pending = lose[route], pending > 0 {
            lose[route] = pending - 1
            loseResponse = true
        }
        return (rejectStatus, loseResponse)
    }
}

extension SyncEngine {
    /// Schedules or applies `fault`.
    public func inject(_ fault: ServerFault) throws {
        switch fault {
        case .loseResponse(let route, let count):
            faults.withLock { $0.lose[route, default: 0] += count }
        case .rejectRequests(let route, let count, let status):
            faults.withLock { $0.reject[route] = (count, status == 503 ? 503 : 429) }
        case .proxyError(let route, let count, let status, let retryAfter):
            faults.withLock { $0.proxy[route] = (count, status, retryAfter) }
        case .pauseMaterialization:
            state.withLock { $0.materializationPaused = true }
        case .resumeMaterialization:
            state.withLock { state in
                state.materializationPaused = false
                Materializer.materializePending(state: &state)
            }
        case .expireRebuildSessions:
            try state.withLock { state in
                try state.store.db.cachedStatement(
                    "UPDATE rebuild_sessions SET created_us = ?"
                ).run([.integer(configuration.clock.nowMicroseconds() - 24 * 3_600_000_000 - 1)])
            }
        case .expireClientGeneration(let user, let client):
            try state.withLock { state in
                try state.store.db.cachedStatement(
                    "UPDATE clients SET generation = generation + 1 WHERE user_id = ? AND client_id = ?"
                ).run([.text(user), .text(client)])
            }
        case .retireClient(let user, let client):
            try state.withLock { state in
                try state.store.db.cachedStatement(
                    "UPDATE clients SET retired = 1 WHERE user_id = ? AND client_id = ?"
                ).run([.text(user), .text(client)])
            }
        case .changeMembership:
            try state.withLock { state in
                _ = try state.store.nextCounter("membership_generation")
            }
        case .reassignScopes(let user, let grant, let revoke):
            state.withLock { state in
                var override = state.assignmentOverrides[user] ?? AssignmentOverride()
                override.granted.formUnion(grant)
                override.granted.subtract(revoke)
                override.revoked.formUnion(revoke)
                override.revoked.subtract(grant)
                state.assignmentOverrides[user] = override
            }
        case .corruptChecksum(let scope):
            _ = state.withLock { $0.corruptNextChecksum.insert(scope) }
        }
    }

    /// Parses the operator control body `{"fault": "<name>", …parameters}` (docs/server.md).
    static func fault(from body: JSONValue) throws(ExactObjectReader.Violation) -> ServerFault {
        guard case .object(let o) = body, case .string(let name)? = o["fault"] else {
            throw .init("missing_member", "fault")
        }
        func reader(_ required: Set<String>) throws(ExactObjectReader.Violation) -> ExactObjectReader {
            try ExactObjectReader(body, path: "", required: required.union(["fault"]))
        }
        switch name {
        case "lose_response":
            let r = try reader(["route", "count"])
            return .loseResponse(route: try r.string("route"), count: Int(try r.integer("count", in: 1...1000)))
        case "reject_requests":
            let r = try reader(["route", "count", "status"])
            let status = Int(try r.integer("status", in: 429...503))
            guard status == 429 || status == 503 else { throw .init("invalid_status", "status") }
            return .rejectRequests(route: try r.string("route"), count: Int(try r.integer("count", in: 1...1000)),
                                   status: status)
        case "proxy_error":
            let r = try ExactObjectReader(
                body, path: "", required: ["fault", "route", "count", "status"], optional: ["retry_after", "seconds"])
            let status = Int(try r.integer("status", in: 502...504))
            let seconds = r.has("seconds") ? Int(try r.integer("seconds", in: 0...86_400)) : 1
            let retryAfter: ProxyRetryAfter
            switch r.has("retry_after") ? try r.string("retry_after") : "none" {
            case "none": retryAfter = .none
            case "seconds": retryAfter = .seconds(seconds)
            case "http_date": retryAfter = .httpDate(secondsAhead: seconds)
            default: throw .init("invalid_retry_after", "retry_after")
            }
            return .proxyError(route: try r.string("route"), count: Int(try r.integer("count", in: 1...1000)),
                               status: status, retryAfter: retryAfter)
        case "pause_materialization": _ = try reader([]); return .pauseMaterialization
        case "resume_materialization": _ = try reader([]); return .resumeMaterialization
        case "expire_rebuild_sessions": _ = try reader([]); return .expireRebuildSessions
        case "change_membership": _ = try reader([]); return .changeMembership
        case "reassign_scopes":
            let r = try ExactObjectReader(body, path: "", required: ["fault", "user"], optional: ["grant", "revoke"])
            func list(_ name: String) throws(ExactObjectReader.Violation) -> [String] {
                guard r.has(name) else { return [] }
                var scopes: [String] = []
                for item in try r.array(name) {
                    guard case .string(let scope) = item, !scope.isEmpty else { throw .init("invalid_scope", name) }
                    scopes.append(scope)
                }
                return scopes
            }
            return .reassignScopes(user: try r.string("user"), grant: try list("grant"), revoke: try list("revoke"))
        case "corrupt_checksum":
            let r = try reader(["scope"])
            return .corruptChecksum(scope: try r.string("scope"))
        case "expire_client_generation", "retire_client":
            let r = try reader(["user", "client_id"])
            let user = try r.string("user"), client = try r.string("client_id")
            return name == "retire_client"
                ? .retireClient(user: user, client: client) : .expireClientGeneration(user: user, client: client)
        default:
            throw .init("unknown_fault", "fault")
        }
    }
}

extension SyncEngine {
    /// What a reverse proxy answers when the server behind it is unreachable: an HTML page, no envelope.
    func proxyResponse(status: Int, retryAfter: ProxyRetryAfter) -> HTTPResponse {
        let reason = status == 502 ? "Bad Gateway" : status == 503 ? "Service Unavailable" : "Gateway Timeout"
        var headers: HTTPHeaders = [("Content-Type", "text/html")]
        switch retryAfter {
        case .none: break
        case .seconds(let seconds): headers.append(name: "Retry-After", value: String(seconds))
        case .httpDate(let ahead):
            // Rounded up to the next whole second, so the date is at least `ahead` seconds away.
            let now = (configuration.clock.nowMicroseconds() + 999_999) / 1_000_000
            headers.append(name: "Retry-After", value: HTTPDate.format(secondsSinceEpoch: now + Int64(ahead)))
        }
        let body = "<html><head><title>\(status) \(reason)</title></head><body><h1>\(reason)</h1></body></html>\n"
        return HTTPResponse(status: status, headers: headers, body: Array(body.utf8))
    }

    /// The current manifest's hash (tests build schema references with it).
    public var currentSchemaHashForTesting: String? {
        state.withLock { $0.manifest.schemaHash }
    }
}
