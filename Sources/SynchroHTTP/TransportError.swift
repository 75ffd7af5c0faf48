/// Why a request got no HTTP response. Descriptions are fixed texts: they never contain a URL,
/// header, credential or body (wire-protocol §1.6).
public enum TransportError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The host could not be resolved or refused the connection.
    case couldNotConnect
    /// The connect or total timeout passed.
    case timedOut
    /// ``CurlTransport/cancel()`` or the calling task's cancellation stopped the request.
    case cancelled
    /// The response body exceeded `limit` octets after content decoding.
    case tooLarge(limit: Int)
    /// TLS failed: handshake, certificate verification or the CA file.
    case tls
    /// The request cannot be sent as given: a header field with a control character or an invalid
    /// name, a path not starting with `/`, or a base URL that is not `http(s)://`.
    case invalidRequest
    /// Any other libcurl failure, by `CURLcode` (for example 52 empty reply, 56 connection reset).
    case other(code: Int32)

    public var description: String {
        switch self {
        case .couldNotConnect: "could not connect to the server"
        case .timedOut: "the request timed out"
        case .cancelled: "the request was cancelled"
        case .tooLarge(let limit): "the response body exceeds \(limit) octets"
        case .tls: "TLS handshake or certificate verification failed"
        case .invalidRequest: "the request cannot be sent: invalid header field, path or base URL"
        case .other(let code): "transport failure (libcurl code \(code))"
        }
    }
}
