import SynchroProtocol

/// One request to send: method, path below the transport's base URL, header fields and the exact body
/// octets (never re-encoded, so a sealed push is resent byte for byte, wire-protocol §4.9).
///
/// The description shows the method and path only.
public struct TransportRequest: Sendable, Hashable {
    /// The methods the protocol uses (wire-protocol §1.1).
    public enum Method: String, Sendable, Hashable {
        case get = "GET"
        case post = "POST"
    }

    /// The method.
    public var method: Method
    /// The path and optional query, starting with `/`, appended to the base URL as is.
    public var path: String
    /// Header fields sent in this order, duplicates included. The transport adds `Host`,
    /// `Content-Length` and `Accept-Encoding` itself and never adds a `Content-Type`.
    public var headers: HTTPHeaders
    /// The body octets; sent for POST only.
    public var body: [UInt8]
    /// A bound on this reply's body below the transport's ``CurlTransport/Configuration/maximumResponseBytes``
    /// (a route whose replies are small), applied on the wire before decoding and to the decoded body; nil for
    /// the transport's bound.
    public var maximumResponseBytes: Int?

    /// A request with the given parts.
    public init(method: Method, path: String, headers: HTTPHeaders = [], body: [UInt8] = []) {
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body
    }

    /// A protocol POST as the upstream clients send it (wire-protocol §1.2): exactly one
    /// `Authorization: Bearer <credential>`, `Content-Type: application/json` and one `X-App-Version`.
    public static func protocolPost(
        path: String, body: [UInt8], credential: String, appVersion: String
    ) -> TransportRequest {
        TransportRequest(
            method: .post, path: path,
            headers: [
                ("Authorization", "Bearer " + credential),
                ("Content-Type", "application/json"),
                ("X-App-Version", appVersion),
            ],
            body: body)
    }
}

extension TransportRequest: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String { "\(method.rawValue) \(pathWithoutQuery) (\(body.count)-octet body)" }
    public var debugDescription: String { "TransportRequest(\(description), headers: \(headers))" }
    public var customMirror: Mirror {
        Mirror(self, children: ["method": method, "path": pathWithoutQuery, "bodyCount": body.count])
    }

    private var pathWithoutQuery: Substring {
        path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
    }
}
