import Foundation
import Synchronization
import SynchroProtocol

/// A fault the reference delta server plays on the next request to an entity type (tests, benchmarks and
/// `POST /v1/admin/faults`; docs/delta-server.md).
public enum DeltaServerFault: Sendable, Equatable {
    /// `status` (429 or 503 in practice) with an optional `Retry-After` value.
    case status(Int, retryAfter: String?)
    /// `{"changes": [], "reset": true}`: the client starts that entity type again from zero.
    case reset
    /// The page with its second change's `rev` equal to the first's.
    case repeatedRev
    /// The page with its changes in descending `rev` order.
    case descendingRev
    /// The page (or the push) is computed and committed, then its body is lost in transit.
    case lostResponse

    /// The fault named `name` (`429`, `503`, `reset`, `repeated_rev`, `descending_rev`, `lost_response`).
    public init?(name: String, retryAfter: String?) {
        switch name {
        case "429": self = .status(429, retryAfter: retryAfter)
        case "503": self = .status(503, retryAfter: retryAfter)
        case "reset": self = .reset
        case "repeated_rev": self = .repeatedRev
        case "descending_rev": self = .descendingRev
        case "lost_response": self = .lostResponse
        default: return nil
        }
    }
}

/// The reference delta-sync server (`seedkit serve --protocol delta`; docs/delta-server.md): seed 003's pull
/// (`GET /v1/sync/{entity}?since=&limit=`) and push (`POST /v1/sync/{entity}`) endpoints over ``DeltaStore``, and
/// seed 004's list shape (`GET /v1/list/{entity}?updatedAfter=&limit=` or OData's `$filter=updatedAt gt X&$top=N`,
/// each row with `updatedAt` and `deletedAt` from its revision's timestamp). A bearer token guards every route when
/// one is configured. Faults are queued per entity type.
public final class DeltaReferenceServer: Sendable {
    public let store: DeltaStore
    private let entities: Set<String>
    private let token: String?
    private let server: HTTPServer
    private let state = Mutex(State())

    struct State {
        var faults: [(entity: String, fault: DeltaServerFault)] = []
        var beforePull: (@Sendable (String) -> Void)?
    }

    /// A server for `entities` over the store at `path` (created when missing); not listening until ``start``.
    public init(storePath: String, entities: [String], token: String?) throws {
        let store = try DeltaStore(path: storePath)
        self.store = store
        self.entities = Set(entities)
        self.token = token
        let box = Box()
        server = HTTPServer(handler: HTTPClosureHandler { request in
            box.server?.answer(request) ?? HTTPResponse(status: 503)
        })
        box.server = self
    }

    private final class Box: @unchecked Sendable {
        weak var server: DeltaReferenceServer?
    }

    /// Starts listening; returns the port.
    @discardableResult
    public func start(host: String = "127.0.0.1", port: UInt16 = 0) throws -> UInt16 {
        try server.start(host: host, port: port)
    }

    public func stop() {
        server.stop()
    }

    /// `http://HOST:PORT` once started.
    public var baseURL: String { "http://127.0.0.1:\(server.port ?? 0)" }

    /// Queues `fault` for the next request to `entity`.
    public func inject(_ fault: DeltaServerFault, for entity: String) {
        state.withLock { $0.faults.append((entity, fault)) }
    }

    /// Runs `hook` before each pull page is computed (writes landing while an export runs, in tests).
    public func beforeEachPull(_ hook: @escaping @Sendable (String) -> Void) {
        state.withLock { $0.beforePull = hook }
    }

    // MARK: answers

    private func answer(_ request: HTTPRequest) -> HTTPResponse {
        if let token, request.headers.single("Authorization") != "Bearer " + token {
            return .jsonError(status: 401, code: "unauthorized", message: "a bearer token is required", retryable: false)
        }
        let parts = request.path.split(separator: "/").map(String.init)
        guard parts.count == 3, parts[0] == "v1" else { return HTTPResponse(status: 404) }
        let parameters = Self.parameters(request.query ?? "")
        if parts[1] == "admin" { return admin(parts[2], request: request, parameters: parameters) }
        let entity = parts[2]
        guard entities.contains(entity) else { return HTTPResponse(status: 404) }
        let (fault, hook) = state.withLock { state -> (DeltaServerFault?, (@Sendable (String) -> Void)?) in
            let index = state.faults.firstIndex { $0.entity == entity }
            return (index.map { state.faults.remove(at: $0).fault }, state.beforePull)
        }
        if case .status(let status, let retryAfter) = fault {
            return HTTPResponse(status: status, headers: retryAfter.map { [("Retry-After", $0)] } ?? [])
        }
        let response: HTTPResponse
        do {
            switch (parts[1], request.method) {
            case ("sync", "GET"):
                hook?(entity)
                response = try DeltaPages.changes(store: store, entity: entity, parameters: parameters, fault: fault)
            case ("sync", "POST"):
                response = try DeltaPush.apply(store: store, entity: entity, body: request.body)
            case ("list", "GET"):
                hook?(entity)
                response = try DeltaPages.list(store: store, entity: entity, parameters: parameters)
            default:
                return HTTPResponse(status: 405)
            }
        } catch {
            return .jsonError(status: 500, code: "internal", message: "the store failed", retryable: true)
        }
        return fault == .lostResponse ? response.losingBody() : response
    }

    /// `POST /v1/admin/vacuum?entity=X` and `POST /v1/admin/faults?entity=X&fault=NAME[&retry_after=S]`.
    private func admin(_ action: String, request: HTTPRequest, parameters: [String: String]) -> HTTPResponse {
        guard request.method == "POST", let entity = parameters["entity"], entities.contains(entity) else {
            return HTTPResponse(status: 400)
        }
        switch action {
        case "vacuum":
            do { try store.vacuum(entity: entity) } catch { return HTTPResponse(status: 500) }
        case "faults":
            guard let fault = DeltaServerFault(name: parameters["fault"] ?? "", retryAfter: parameters["retry_after"])
            else { return HTTPResponse(status: 400) }
            inject(fault, for: entity)
        default:
            return HTTPResponse(status: 404)
        }
        return HTTPResponse(status: 204)
    }

    /// The query's `name=value` pairs, percent-decoded.
    static func parameters(_ query: String) -> [String: String] {
        var result: [String: String] = [:]
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, let name = String(parts[0]).removingPercentEncoding else { continue }
            result[name] = String(parts[1]).removingPercentEncoding
        }
        return result
    }
}
