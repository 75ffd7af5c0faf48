import SynchroProtocol

/// A response to send: status, header fields in order, and the exact body octets.
///
/// `Content-Length` is always computed from `body` by the server; `Content-Length` and
/// `Transfer-Encoding` fields set here are ignored (wire-protocol §1.3).
public struct HTTPResponse: Sendable, Hashable {
    /// The status code, 100–599.
    public var status: Int
    /// Header fields in the order they are sent; duplicates are sent as separate fields.
    public var headers: HTTPHeaders
    /// The body octets, sent byte for byte.
    public var body: [UInt8]
    /// When true the status line and header fields (with the `Content-Length` of `body`) are sent, then the
    /// connection is aborted before any body octet (``losingBody()``).
    public private(set) var abortsBody = false

    /// A response with the given parts.
    public init(status: Int, headers: HTTPHeaders = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// This response lost in transit after the server committed its effect, as fault injection schedules it: the
    /// status line and header fields go out announcing the body's length, then the connection is aborted before
    /// the body. The client always sees a failed transfer (libcurl: `CURLE_PARTIAL_FILE`, or
    /// `CURLE_GOT_NOTHING` for an empty body), never a response, and because response octets arrived, libcurl
    /// cannot mistake it for a stale keep-alive connection and silently resend the request (as it does with
    /// ``dropConnection``). An empty body is announced as one octet so that the abort is still seen.
    public func losingBody() -> HTTPResponse {
        var lost = self
        lost.abortsBody = true
        return lost
    }

    /// A JSON response: `body` is sent unchanged with `Content-Type: application/json`, which replaces
    /// any `Content-Type` in `headers`.
    public static func json(status: Int = 200, body: [UInt8], headers: HTTPHeaders = []) -> HTTPResponse {
        var headers = headers
        headers.replace(name: "Content-Type", value: "application/json")
        return HTTPResponse(status: status, headers: headers, body: body)
    }

    /// The protocol error envelope `{"error":{"code":…,"message":…,"retryable":…}}` (wire-protocol §8.1)
    /// as a JSON response. `message` must be a bounded text that echoes no request content.
    public static func jsonError(
        status: Int, code: String, message: String, retryable: Bool, headers: HTTPHeaders = []
    ) -> HTTPResponse {
        var text = #"{"error":{"code":"#
        appendJSONString(code, to: &text)
        text += #","message":"#
        appendJSONString(message, to: &text)
        text += #","retryable":"# + (retryable ? "true" : "false") + "}}"
        return json(status: status, body: Array(text.utf8), headers: headers)
    }

    /// The default answer to a body over the configured limit: 400 `invalid_request`, the status
    /// and code the protocol gives an over-limit push (wire-protocol §9).
    public static let bodyTooLarge = jsonError(
        status: 400, code: "invalid_request", message: "request body too large", retryable: false)

    /// Closes the connection without sending anything. On a reused keep-alive connection libcurl reads
    /// that as a stale connection and resends the request without telling its caller, so a lost response
    /// is scheduled with ``losingBody()`` instead.
    public static let dropConnection = HTTPResponse(status: 0)

    /// True for ``dropConnection``.
    public var dropsConnection: Bool { status == 0 }

    /// Sent instead of a response the server cannot put on the wire (a status outside 100–599 or a
    /// header field with a control character), so a handler bug never leaves the client hanging.
    static let unsendable = jsonError(
        status: 500, code: "sync_integrity_failure", message: "sync operation failed", retryable: false)
}

extension HTTPResponse: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String { "\(status) (\(body.count)-octet body\(abortsBody ? ", aborted" : ""))" }
    public var debugDescription: String { "HTTPResponse(\(description), headers: \(headers))" }
    public var customMirror: Mirror {
        Mirror(self, children: ["status": status, "headers": headers, "bodyCount": body.count])
    }
}

/// RFC 8259 string escaping for the few texts the HTTP layer renders itself.
private func appendJSONString(_ value: String, to text: inout String) {
    text += "\""
    for scalar in value.unicodeScalars {
        switch scalar {
        case "\"": text += "\\\""
        case "\\": text += "\\\\"
        case "\n": text += "\\n"
        case "\r": text += "\\r"
        case "\t": text += "\\t"
        case let control where control.value < 0x20:
            let hex = String(control.value, radix: 16)
            text += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
        default: text.unicodeScalars.append(scalar)
        }
    }
    text += "\""
}
