/// A request that got no usable answer, said so a user can fix it: the URL (without query, fragment or
/// credentials, so no cursor or token is ever printed) and the kind of failure, a transport failure
/// (``TransportError``) or an HTTP status that stayed retryable until the attempts ran out.
public struct NetworkFailure: Error, Sendable, Hashable, CustomStringConvertible {
    /// The URL as safe to print (``displayURL(_:)``).
    public let url: String
    /// The transport failure of the last attempt; nil when the last attempt got a retryable status.
    public let error: TransportError?
    /// The retryable HTTP status of the last attempt (429, 502, 503, 504) when ``error`` is nil.
    public let status: Int?
    /// Attempts made, the first included.
    public let attempts: Int

    /// A transport failure of `url` after `attempts` attempts.
    public init(url: String, error: TransportError, attempts: Int = 1) {
        self.url = Self.displayURL(url)
        self.error = error
        status = nil
        self.attempts = attempts
    }

    /// A retryable status of `url` that was still answered after `attempts` attempts.
    public init(url: String, status: Int, attempts: Int) {
        self.url = Self.displayURL(url)
        error = nil
        self.status = status
        self.attempts = attempts
    }

    /// `connection_refused`, `dns_failure`, `tls_failure`, `timeout`, `connection_reset`, … or `http_503`.
    public var rule: String {
        error?.rule ?? "http_\(status ?? 0)"
    }

    /// Whether the attempts ran out on a failure that could have passed with more of them (exit status 4), as
    /// opposed to a failure that is not retried at all (DNS, TLS).
    public var retriesExhausted: Bool {
        attempts > 1 || (error?.isTransient ?? true)
    }

    public var description: String {
        let what = error?.description ?? "HTTP \(status ?? 0), still retryable"
        let tries = attempts > 1 ? " after \(attempts) attempts" : ""
        return "\(what): \(url)\(tries) (\(rule))"
    }

    /// `url` without user information (`user:password@`), a query or a fragment.
    public static func displayURL(_ url: String) -> String {
        var text = Substring(url)
        if let end = text.firstIndex(where: { $0 == "?" || $0 == "#" }) { text = text[..<end] }
        guard let scheme = text.range(of: "://") else { return String(text) }
        let authorityEnd = text[scheme.upperBound...].firstIndex(of: "/") ?? text.endIndex
        if let at = text[scheme.upperBound..<authorityEnd].lastIndex(of: "@") {
            return String(text[..<scheme.upperBound]) + String(text[text.index(after: at)...])
        }
        return String(text)
    }
}
