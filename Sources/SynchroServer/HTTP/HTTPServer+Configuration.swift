extension HTTPServer {
    /// Limits and timeouts of one server.
    public struct Configuration: Sendable {
        /// The largest request body accepted, in octets. The push limit of wire-protocol §9 is the
        /// default. A larger body is answered with ``oversizeResponse`` and never reaches the handler;
        /// at most this many octets are ever buffered.
        public var maximumBodyBytes: Int = 1_048_576

        /// The answer to a body over ``maximumBodyBytes``. It receives the request head (the body is
        /// never read) and must echo no request content. Default: ``HTTPResponse/bodyTooLarge``.
        public var oversizeResponse: @Sendable (HTTPRequestHead) -> HTTPResponse = { _ in .bodyTooLarge }

        /// How many octets past ``maximumBodyBytes`` are read and discarded so that a client still
        /// sending can read the rejection (a client closing on unread data would otherwise see a
        /// reset). Beyond it the connection is closed without an answer. Clients that send
        /// `Expect: 100-continue` with an oversize `Content-Length` are answered before they send
        /// anything.
        public var oversizeDrainBytes: Int = 4 * 1_048_576

        /// Idle time after which a connection is closed; rounded up to whole seconds.
        public var connectionTimeout: Duration = .seconds(30)

        /// How long a connection has to deliver a complete request (request line, header fields and body), from
        /// when it opens or its previous response was sent; past it the connection is closed without an answer.
        /// The idle timeout alone let a client sending one header line every few seconds hold a connection for
        /// ever (issue #19). Nil sets no deadline. At the 1 MiB push limit the default allows about 35 KB/s.
        public var requestDeadline: Duration? = .seconds(30)

        /// Connections served at once, each with at most one request in its handler (on a thread of
        /// its own). Further clients wait in the backlog.
        public var maximumConnections: Int = 256

        /// Connections one client address may hold at once (libmicrohttpd's per-IP limit); a further
        /// connection from that address is closed as soon as it is accepted, so one client cannot take every
        /// slot of ``maximumConnections``. 0, the library's default, sets no limit (tests and benchmarks run
        /// many clients from loopback); `seedkit serve` uses ``servePerAddressLimit``.
        public var maximumConnectionsPerAddress: Int = 0

        /// The per-address limit of `seedkit serve`.
        public static let servePerAddressLimit = 32

        /// Memory per connection for the request line and header fields (libmicrohttpd's pool).
        public var connectionMemoryBytes: Int = 64 * 1024

        /// How long ``HTTPServer/stop()`` lets requests already received finish and be answered
        /// before closing their connections.
        public var shutdownGracePeriod: Duration = .seconds(10)

        /// The default configuration.
        public init() {}
    }
}
