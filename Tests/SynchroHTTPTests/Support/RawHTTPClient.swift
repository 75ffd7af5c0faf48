import Glibc

/// Speaks HTTP/1.1 over a plain loopback socket for the request shapes the transport never produces
/// (chunked uploads). Reads until the server closes, with a receive timeout so a broken server fails
/// the test instead of hanging it.
enum RawHTTPClient {
    /// Sends `request` verbatim to 127.0.0.1:`port` and returns everything the server sent back.
    static func exchange(port: UInt16, _ request: [UInt8]) -> [UInt8]? {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
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
        guard connected == 0 else { return nil }
        var offset = 0
        while offset < request.count {
            // MSG_NOSIGNAL: a server closing under the upload must not kill the test process.
            let sent = request[offset...].withUnsafeBytes {
                send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            guard sent > 0 else { break }
            offset += sent
        }
        var response: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let received = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            guard received > 0 else { break }
            response += buffer[0..<received]
        }
        return response
    }

    /// A chunked POST to `path` carrying `chunks`, asking the server to close afterwards.
    static func chunkedPost(_ path: String, chunks: [[UInt8]]) -> [UInt8] {
        let head = [
            "POST \(path) HTTP/1.1", "Host: 127.0.0.1", "Content-Type: application/json",
            "Transfer-Encoding: chunked", "Connection: close", "", "",
        ]
        var request = Array(head.joined(separator: "\r\n").utf8)
        for chunk in chunks {
            request += Array((String(chunk.count, radix: 16) + "\r\n").utf8) + chunk + Array("\r\n".utf8)
        }
        return request + Array("0\r\n\r\n".utf8)
    }

    /// The status code and body of a raw response (body after the blank line, as sent).
    static func parse(_ response: [UInt8]) -> (status: Int, body: [UInt8])? {
        let separator = Array("\r\n\r\n".utf8)
        guard response.count > 12,
            let end = (0...(response.count - separator.count)).first(where: {
                Array(response[$0..<($0 + separator.count)]) == separator
            })
        else { return nil }
        guard let status = Int(String(decoding: response[9..<12], as: UTF8.self)) else { return nil }
        return (status, Array(response[(end + separator.count)...]))
    }
}
