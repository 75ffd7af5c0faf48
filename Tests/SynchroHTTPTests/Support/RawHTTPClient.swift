import Glibc
import _SeedkitTestSupport

/// Speaks HTTP/1.1 over a plain loopback socket for the request shapes the transport never produces
/// (chunked uploads). Reads until the server closes, with a receive timeout so a broken server fails
/// the test instead of hanging it.
enum RawHTTPClient {
    /// Sends `request` verbatim to 127.0.0.1:`port` and returns everything the server sent back.
    static func exchange(port: UInt16, _ request: [UInt8]) -> [UInt8]? {
        guard let client = LoopbackClient(port: port) else { return nil }
        client.send(request)
        return client.receiveUntilClosed()
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
