/// Maps exact (method, path) pairs to handlers. A known path with another method gets 405 with an
/// `Allow` header (wire-protocol §1.1); an unknown path gets 404. Both bodies come from the caller
/// and are sent as JSON.
public struct HTTPRouter: HTTPHandler {
    /// Why no route matched.
    public enum Miss: Error, Sendable, Hashable {
        /// No route has this path.
        case notFound
        /// The path exists for these methods only, in registration order.
        case methodNotAllowed(allowed: [String])
    }

    private struct Route: Sendable {
        let method: String
        let handler: any HTTPHandler
    }

    /// Routes by path; methods in registration order so `Allow` is stable.
    private var routes: [String: [Route]] = [:]
    private let missBody: @Sendable (Miss, HTTPRequestHead) -> [UInt8]

    /// A router without routes. `missBody` renders the JSON body of every 404 and 405; it must echo no
    /// request content.
    public init(missBody: @escaping @Sendable (Miss, HTTPRequestHead) -> [UInt8]) {
        self.missBody = missBody
    }

    /// Routes `method` on exactly `path` (no query, no trailing-slash folding) to `handler`, replacing
    /// an earlier route for the same pair.
    public mutating func add(_ method: String, _ path: String, _ handler: some HTTPHandler) {
        var list = routes[path, default: []]
        if let index = list.firstIndex(where: { $0.method == method }) {
            list[index] = Route(method: method, handler: handler)
        } else {
            list.append(Route(method: method, handler: handler))
        }
        routes[path] = list
    }

    /// Routes `method` on exactly `path` to a closure.
    public mutating func add(
        _ method: String, _ path: String, handler: @escaping @Sendable (HTTPRequest) -> HTTPResponse
    ) {
        add(method, path, HTTPClosureHandler(handler))
    }

    /// The routing decision for `head`, without calling any handler.
    public func match(_ head: HTTPRequestHead) -> Result<any HTTPHandler, Miss> {
        guard let list = routes[head.path] else { return .failure(.notFound) }
        if let route = list.first(where: { $0.method == head.method }) {
            return .success(route.handler)
        }
        return .failure(.methodNotAllowed(allowed: list.map(\.method)))
    }

    public func handle(_ request: HTTPRequest) -> HTTPResponse {
        switch match(request.head) {
        case .success(let handler):
            return handler.handle(request)
        case .failure(let miss):
            let body = missBody(miss, request.head)
            switch miss {
            case .notFound:
                return .json(status: 404, body: body)
            case .methodNotAllowed(let allowed):
                return .json(status: 405, body: body, headers: [("Allow", allowed.joined(separator: ", "))])
            }
        }
    }
}
