import Glibc

/// A plain loopback TCP client with a receive timeout, for byte sequences no HTTP client library sends.
public final class LoopbackClient {
    private let descriptor: Int32

    public init?(port: UInt16) {
        let kind = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        descriptor = socket(AF_INET, kind, 0)
        guard descriptor >= 0 else { return nil }
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

    /// Reads up to the end of a response head; enough for a response without a body.
    public func receiveHead() -> [UInt8] {
        var received: [UInt8] = []
        var octet: UInt8 = 0
        while !received.suffix(4).elementsEqual(Array("\r\n\r\n".utf8)), recv(descriptor, &octet, 1, 0) == 1 {
            received.append(octet)
        }
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
