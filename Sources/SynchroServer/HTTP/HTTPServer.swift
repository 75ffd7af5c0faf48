import Synchronization

/// An embedded HTTP/1.1 server over libmicrohttpd that hands every complete request to one
/// ``HTTPHandler``. It listens on loopback by default (wire-protocol §1.1: the reference server is
/// plain HTTP on loopback), reads bodies up to a limit enforced while reading, and never logs
/// anything: header fields and bodies carry credentials, cursors and row values.
///
/// Threading: one thread reads and writes every connection; each complete request is handled on a
/// thread of its own, so handlers may block; see ``HTTPHandler``.
public final class HTTPServer: Sendable {
    private let handler: any HTTPHandler
    /// The limits and timeouts this server was created with.
    public let configuration: Configuration
    /// Held for the whole of `start` and `stop`, so they never interleave.
    private let lifecycle = Mutex<MicroHTTPDDaemon?>(nil)
    private let boundPort = Atomic<UInt16>(0)

    /// A stopped server that will answer with `handler`.
    public init(configuration: Configuration = Configuration(), handler: some HTTPHandler) {
        self.configuration = configuration
        self.handler = handler
    }

    /// A stopped server that will answer with `handle`.
    public convenience init(
        configuration: Configuration = Configuration(), handle: @escaping @Sendable (HTTPRequest) -> HTTPResponse
    ) {
        self.init(configuration: configuration, handler: HTTPClosureHandler(handle))
    }

    deinit {
        stop()
    }

    /// The port the server listens on, or `nil` while it is stopped.
    public var port: UInt16? {
        let port = boundPort.load(ordering: .acquiring)
        return port == 0 ? nil : port
    }

    /// Starts listening on the numeric address `host`; port 0 lets the kernel choose a free port.
    /// Returns the port actually bound.
    @discardableResult
    public func start(host: String = "127.0.0.1", port: UInt16 = 0) throws(HTTPServerError) -> UInt16 {
        try lifecycle.withLock { running throws(HTTPServerError) -> UInt16 in
            guard running == nil else { throw .alreadyRunning }
            let backlog = Int32(clamping: max(configuration.maximumConnections, 16))
            let socket = try ListeningSocket.open(host: host, port: port, backlog: backlog)
            running = try MicroHTTPDDaemon.start(on: socket, handler: handler, configuration: configuration)
            boundPort.store(socket.port, ordering: .releasing)
            return socket.port
        }
    }

    /// Stops the server: no new connections are accepted, requests already received get up to
    /// ``Configuration/shutdownGracePeriod`` to be answered, then every connection is closed and every
    /// handler has returned. Does nothing when the server is not running; safe to call repeatedly and
    /// from any thread except a handler's.
    public func stop() {
        lifecycle.withLock { running in
            guard let daemon = running else { return }
            boundPort.store(0, ordering: .releasing)
            daemon.stop(grace: configuration.shutdownGracePeriod)
            running = nil
        }
    }
}
