/// Why a request got no HTTP response. Descriptions are fixed texts: they never contain a URL,
/// header, credential or body (wire-protocol §1.6); ``NetworkFailure`` adds the URL a user needs, without its
/// query or credentials.
public enum TransportError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Nothing accepted the connection: refused (no server on the port) or the host unreachable.
    case connectionRefused
    /// The host name did not resolve (DNS).
    case dnsFailure
    /// The connect or total timeout passed.
    case timedOut
    /// The connection was reset or closed before a complete reply arrived.
    case connectionReset
    /// ``CurlTransport/cancel()`` or the calling task's cancellation stopped the request.
    case cancelled
    /// The response body exceeded `limit` octets after content decoding.
    case tooLarge(limit: Int)
    /// TLS failed: handshake, certificate verification or the CA file.
    case tls
    /// The request cannot be sent as given: a header field with a control character or an invalid
    /// name, a path not starting with `/`, or a base URL that is not `http(s)://`.
    case invalidRequest
    /// Any other libcurl failure, by `CURLcode` (for example 18 partial file).
    case other(code: Int32)

    public var description: String {
        switch self {
        case .connectionRefused: "connection refused (no server listening, or the host is unreachable)"
        case .dnsFailure: "the host name does not resolve (DNS)"
        case .timedOut: "the request timed out"
        case .connectionReset: "the connection was reset or closed before a reply"
        case .cancelled: "the request was cancelled"
        case .tooLarge(let limit): "the response body exceeds \(limit) octets"
        case .tls: "TLS handshake or certificate verification failed"
        case .invalidRequest: "the request cannot be sent: invalid header field, path or base URL"
        case .other(let code): "transport failure (libcurl code \(code))"
        }
    }

    /// The rule this failure breaks, the same in text and JSON output (docs/cli.md, "Network failures").
    public var rule: String {
        switch self {
        case .connectionRefused: "connection_refused"
        case .dnsFailure: "dns_failure"
        case .timedOut: "timeout"
        case .connectionReset: "connection_reset"
        case .cancelled: "cancelled"
        case .tooLarge: "response_too_large"
        case .tls: "tls_failure"
        case .invalidRequest: "invalid_request"
        case .other: "network_failure"
        }
    }

    /// Whether sending the same request again may succeed within seconds: a refused connection (a server
    /// restarting), a timeout, a reset. A name that does not resolve, a TLS failure, an oversized reply or an
    /// invalid request are configuration errors that a retry would only delay (docs/decisions.md, "Network
    /// failures are typed; only transient ones are retried").
    public var isTransient: Bool {
        switch self {
        case .connectionRefused, .timedOut, .connectionReset, .other: true
        case .dnsFailure, .tls, .tooLarge, .invalidRequest, .cancelled: false
        }
    }
}
