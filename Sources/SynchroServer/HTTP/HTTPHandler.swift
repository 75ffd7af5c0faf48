/// Answers complete requests. Each call runs on a thread of its own, possibly for many requests at
/// once, so implementations must be thread-safe; a handler may block (database work) without
/// stalling other connections. A handler must never call ``HTTPServer/stop()``: stopping waits for
/// handlers to return.
public protocol HTTPHandler: Sendable {
    /// The response to `request`.
    func handle(_ request: HTTPRequest) -> HTTPResponse
}

/// An ``HTTPHandler`` made from a closure.
public struct HTTPClosureHandler: HTTPHandler {
    private let body: @Sendable (HTTPRequest) -> HTTPResponse

    /// A handler that answers with `body`.
    public init(_ body: @escaping @Sendable (HTTPRequest) -> HTTPResponse) {
        self.body = body
    }

    public func handle(_ request: HTTPRequest) -> HTTPResponse {
        body(request)
    }
}
