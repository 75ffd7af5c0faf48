import SystemKit

/// Why ``HTTPServer/start(host:port:)`` failed. Descriptions name the failing step and the operating system's
/// reason (`strerror`, e.g. "Address already in use"), never request data.
public enum HTTPServerError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The server is already running; stop it first.
    case alreadyRunning
    /// `host` is not a numeric IPv4 or IPv6 address.
    case invalidHost
    /// The listening socket could not be created.
    case socket(errno: Int32)
    /// The address is in use or not available.
    case bind(errno: Int32)
    /// The socket could not be put into listening state.
    case listen(errno: Int32)
    /// libmicrohttpd refused to start (resources or an invalid configuration).
    case daemonFailed

    public var description: String {
        switch self {
        case .alreadyRunning: "HTTP server is already running"
        case .invalidHost: "HTTP server host must be a numeric IPv4 or IPv6 address"
        case .socket(let code): "HTTP server could not create a socket: \(SystemError.reason(for: code))"
        case .bind(let code): "HTTP server could not bind its address: \(SystemError.reason(for: code))"
        case .listen(let code): "HTTP server could not listen: \(SystemError.reason(for: code))"
        case .daemonFailed: "HTTP server could not start libmicrohttpd"
        }
    }
}
