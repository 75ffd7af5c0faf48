import Glibc

/// A plain loopback TCP client with a receive timeout, for byte sequences no HTTP client library sends.
public final class LoopbackClient {
    private let descriptor: Int32

    /// Connects to `port` on 127.0.0.1, from the loopback address `source` (another address of 127/8, so
    /// that a server sees two clients) or from the kernel's choice.
    public init?(port: UInt16, from source: String? = nil) {
        let kind = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        descriptor = socket(AF_INET, kind, 0)
        guard descriptor >= 0 else { return nil }
        if let source {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            guard inet_pton(AF_INET, source, &local.sin_addr) == 1,
                withUnsafePointer(to: &local, {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                    }
                }) == 0
            else {
                close(descriptor)
                return nil
            }
        }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        _ = setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            close(descriptor)
            return nil
        }
    }

    deinit {
        close(descriptor)
    }

    /// Sends `bytes`; a server that closed meanwhile is not an error here.
    public func send(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            // MSG_NOSIGNAL: a server closing under the write must not kill the test process.
            let sent = bytes[offset...].withUnsafeBytes {
                Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            guard sent > 0 else { return }
            offset += sent
        }
    }

    /// Waits up to `timeout` for the server to close the connection (or reset it); returns whether it did.
    /// Returns early on close, so it doubles as the pause between the octets of a slow client.
    public func closes(within timeout: Duration) -> Bool {
        let (seconds, attoseconds) = timeout.components
        var descriptors = [pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)]
        guard poll(&descriptors, 1, Int32(seconds * 1000 + attoseconds / 1_000_000_000_000_000)) == 1 else {
            return false
        }
        var octet: UInt8 = 0
        return recv(descriptor, &octet, 1, Int32(MSG_PEEK | MSG_DONTWAIT)) <= 0
    }

    /// Reads up to the end of a response head; enough for a response without a body.
    public func receiveHead() -> [UInt8] {
        var received: [UInt8] = []
        var octet: UInt8 = 0
        while !received.suffix(4).elementsEqual(Array("\r\n\r\n".utf8)), recv(descriptor, &octet, 1, 0) == 1 {
            received.append(octet)
        }
        return received
    }

    /// Reads exactly `count` octets (fewer when the server closes first).
    public func receive(count: Int) -> [UInt8] {
        var received: [UInt8] = []
        var octet: UInt8 = 0
        while received.count < count, recv(descriptor, &octet, 1, 0) == 1 { received.append(octet) }
        return received
    }

    /// Everything the server sends until it closes the connection (or the receive timeout passes).
    public func receiveUntilClosed() -> [UInt8] {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4_096)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { return received }
            received += buffer[0..<count]
        }
    }
}
