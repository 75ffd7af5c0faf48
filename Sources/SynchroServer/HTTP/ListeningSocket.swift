import Glibc

/// The server binds its own socket so that it knows the port the kernel chose for port 0
/// (libmicrohttpd's `MHD_get_daemon_info` is variadic and cannot be called from Swift).
struct ListeningSocket {
    let descriptor: Int32
    let port: UInt16
    let isIPv6: Bool

    /// A nonblocking, close-on-exec socket bound to the numeric address `host` and listening.
    static func open(host: String, port: UInt16, backlog: Int32) throws(HTTPServerError) -> ListeningSocket {
        var address4 = sockaddr_in()
        var address6 = sockaddr_in6()
        let isIPv6: Bool
        if inet_pton(AF_INET, host, &address4.sin_addr) == 1 {
            isIPv6 = false
            address4.sin_family = sa_family_t(AF_INET)
            address4.sin_port = port.bigEndian
        } else if inet_pton(AF_INET6, host, &address6.sin6_addr) == 1 {
            isIPv6 = true
            address6.sin6_family = sa_family_t(AF_INET6)
            address6.sin6_port = port.bigEndian
        } else {
            throw .invalidHost
        }
        let kind = Int32(Glibc.SOCK_STREAM.rawValue) | Int32(Glibc.SOCK_CLOEXEC.rawValue) | Int32(Glibc.SOCK_NONBLOCK.rawValue)
        let descriptor = socket(isIPv6 ? AF_INET6 : AF_INET, kind, 0)
        guard descriptor >= 0 else { throw .socket(errno: errno) }
        do throws(HTTPServerError) {
            // A restarted server must get its port back while old connections sit in TIME_WAIT.
            var one: Int32 = 1
            _ = setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
            let bound =
                isIPv6
                ? withSocketAddress(&address6) { bind(descriptor, $0, $1) }
                : withSocketAddress(&address4) { bind(descriptor, $0, $1) }
            guard bound == 0 else { throw .bind(errno: errno) }
            guard Glibc.listen(descriptor, backlog) == 0 else { throw .listen(errno: errno) }
            let actualPort = try boundPort(of: descriptor, isIPv6: isIPv6)
            return ListeningSocket(descriptor: descriptor, port: actualPort, isIPv6: isIPv6)
        } catch {
            close(descriptor)
            throw error
        }
    }

    private static func boundPort(of descriptor: Int32, isIPv6: Bool) throws(HTTPServerError) -> UInt16 {
        if isIPv6 {
            var address = sockaddr_in6()
            let result = withSocketAddress(&address) { pointer, length in
                var length = length
                return getsockname(descriptor, pointer, &length)
            }
            guard result == 0 else { throw .bind(errno: errno) }
            return UInt16(bigEndian: address.sin6_port)
        }
        var address = sockaddr_in()
        let result = withSocketAddress(&address) { pointer, length in
            var length = length
            return getsockname(descriptor, pointer, &length)
        }
        guard result == 0 else { throw .bind(errno: errno) }
        return UInt16(bigEndian: address.sin_port)
    }
}

private func withSocketAddress<Address, Result>(
    _ address: inout Address, _ body: (UnsafeMutablePointer<sockaddr>, socklen_t) -> Result
) -> Result {
    withUnsafeMutablePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            body($0, socklen_t(MemoryLayout<Address>.size))
        }
    }
}
