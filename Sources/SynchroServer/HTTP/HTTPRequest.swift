import SynchroProtocol

/// The request line and header fields of a request, known before its body is read.
///
/// The description shows the method and path only: queries, header values and bodies may carry
/// credentials or cursors (wire-protocol §1.6).
public struct HTTPRequestHead: Sendable, Hashable {
    /// The method exactly as sent (`POST`, `GET`, …); methods are case-sensitive.
    public var method: String
    /// The request target up to the first `?`, exactly as sent (not percent-decoded).
    public var path: String
    /// The text after the first `?` of the request target, or `nil` when the target has no `?`.
    public var query: String?
    /// The header fields in wire order, duplicates kept.
    public var headers: HTTPHeaders

    /// A request head; `path` must not contain the query.
    public init(method: String, path: String, query: String? = nil, headers: HTTPHeaders = []) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
    }

    /// Splits a raw request target such as `/sync/pull?x=1` into path and query.
    init(method: String, target: String, headers: HTTPHeaders) {
        if let mark = target.utf8.firstIndex(of: UInt8(ascii: "?")) {
            let afterMark = target.utf8.index(after: mark)
            self.init(
                method: method, path: String(target[..<mark]), query: String(target[afterMark...]),
                headers: headers)
        } else {
            self.init(method: method, path: target, query: nil, headers: headers)
        }
    }
}

/// A complete request as delivered to an ``HTTPHandler``: the head and the exact body octets.
public struct HTTPRequest: Sendable, Hashable {
    /// Request line and header fields.
    public var head: HTTPRequestHead
    /// The body octets exactly as received (never decoded or re-encoded).
    public var body: [UInt8]
    /// The numeric address of the client (IPv4 or IPv6 text) as the server's socket saw it, or nil when the
    /// request did not come over a socket; per-address limits key on it.
    public var clientAddress: String?

    /// A request with `head` and `body` from `clientAddress`.
    public init(head: HTTPRequestHead, body: [UInt8] = [], clientAddress: String? = nil) {
        self.head = head
        self.body = body
        self.clientAddress = clientAddress
    }

    /// The method exactly as sent.
    public var method: String { head.method }
    /// The path without the query, not percent-decoded.
    public var path: String { head.path }
    /// The query after `?`, or `nil`.
    public var query: String? { head.query }
    /// The header fields in wire order, duplicates kept.
    public var headers: HTTPHeaders { head.headers }
}

extension HTTPRequestHead: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String { "\(method) \(path)" }
    public var debugDescription: String { "HTTPRequestHead(\(description), headers: \(headers))" }
    public var customMirror: Mirror { Mirror(self, children: ["method": method, "path": path]) }
}

extension HTTPRequest: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String { "\(head) (\(body.count)-octet body)" }
    public var debugDescription: String { "HTTPRequest(\(description))" }
    public var customMirror: Mirror { Mirror(self, children: ["head": head, "bodyCount": body.count]) }
}
