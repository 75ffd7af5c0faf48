/// The one HTTP operation push needs. `SynchroClient` does not depend on `SynchroHTTP`; the application (or a
/// test) adapts its transport, e.g. `CurlTransport` with `TransportRequest.protocolPost`, to this protocol.
public protocol PushTransport: Sendable {
    /// POSTs `body` exactly as given to `path` with the protocol headers and returns the complete response,
    /// or throws when no response arrived (a lost response is indistinguishable from a lost request).
    func post(path: String, body: [UInt8]) throws -> PushHTTPResponse
}

/// A complete HTTP response.
public struct PushHTTPResponse: Sendable {
    /// HTTP status.
    public let status: Int
    /// Header name/value pairs in received order.
    public let headers: [(name: String, value: String)]
    /// Body octets.
    public let body: [UInt8]

    public init(status: Int, headers: [(name: String, value: String)], body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The first header named `name` (case-insensitive).
    public func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }
}

/// A batch as stored in `_synchro_push_batches`: what is sent, byte for byte, on every attempt.
public struct SealedBatch: Sendable, Equatable {
    /// Lowercase UUID of the batch.
    public let batchID: String
    /// The exact request body.
    public let body: [UInt8]
    /// Member mutation IDs in ordinal order.
    public let mutationIDs: [String]
    /// Whether the batch is an atomic group.
    public let isAtomic: Bool
}
