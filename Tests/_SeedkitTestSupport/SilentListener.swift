import Glibc

/// A loopback TCP listener that accepts and never answers: the kernel completes connections into its backlog, so a
/// client's request waits until its own timeout. `refusedPort()` gives a loopback port nothing listens on.
public struct SilentListener {
    public let descriptor: Int32
    public let port: UInt16

    public init() throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw ListenerError(step: "socket") }
        self.descriptor = descriptor
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { generic in
                bind(descriptor, generic, length) == 0 && listen(descriptor, 4) == 0
                    && getsockname(descriptor, generic, &length) == 0
            }
        }
        guard bound else { throw ListenerError(step: "bind") }
        port = UInt16(bigEndian: address.sin_port)
    }

    /// Waits (bounded, not a sleep) for the first connection and returns it.
    public func acceptOne(timeoutMilliseconds: Int32) throws -> Int32 {
        var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&entry, 1, timeoutMilliseconds) == 1 else { throw ListenerError(step: "no connection") }
        let connection = accept(descriptor, nil, nil)
        guard connection >= 0 else { throw ListenerError(step: "accept") }
        return connection
    }

    public func close() {
        Glibc.close(descriptor)
    }

    /// A loopback port that refuses connections: bound by a listener that is closed again at once.
    public static func refusedPort() throws -> UInt16 {
        let listener = try SilentListener()
        listener.close()
        return listener.port
    }
}

public struct ListenerError: Error {
    public let step: String
}
