extension CurlTransport {
    /// Where and how a transport sends.
    public struct Configuration: Sendable {
        /// `http://` or `https://` origin with an optional path prefix, without credentials, for example
        /// `http://127.0.0.1:8080`. Request paths are appended to it.
        public var baseURL: String
        /// Time allowed to establish the connection (and the TLS session).
        public var connectTimeout: Duration = .seconds(10)
        /// Time allowed for the whole request, connection included.
        public var totalTimeout: Duration = .seconds(60)
        /// The largest response body accepted after content decoding; 64 MiB like the upstream clients'
        /// parsing guard (wire-protocol §9).
        public var maximumResponseBytes: Int = 64 * 1_048_576
        /// A PEM file of CA certificates that replaces the system store. Verification of the peer
        /// certificate and host name is always on.
        public var caFile: String?
        /// A `User-Agent` value, or `nil` to send none.
        public var userAgent: String?

        /// The longest wait for the connection (and TLS session) within a request's limit.
        public static let connectLimit: Duration = .seconds(10)

        /// A configuration for `baseURL` with the default limits.
        public init(baseURL: String) {
            self.baseURL = baseURL
        }

        /// A configuration for `baseURL` whose requests end after `timeout` (`--timeout`), the connection getting
        /// at most ``connectLimit`` of it.
        public init(baseURL: String, timeout: Duration) {
            self.baseURL = baseURL
            totalTimeout = timeout
            connectTimeout = min(timeout, Self.connectLimit)
        }
    }
}
