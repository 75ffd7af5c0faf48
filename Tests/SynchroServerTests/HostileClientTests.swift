@testable import SynchroServer
import Testing
import _SeedkitTestSupport

/// A curious or hostile client of the reference server (issue #19): one address cannot hold every connection,
/// and credentials compare without revealing their length.
@Suite("Hostile clients of the reference server")
struct HostileClientTests {
    static let request = Array("GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".utf8)

    @Test("past the per-address limit a further connection from that address is closed without an answer")
    func perAddressLimit() throws {
        var configuration = HTTPServer.Configuration()
        configuration.maximumConnectionsPerAddress = 2
        let server = HTTPServer(configuration: configuration) { _ in HTTPResponse(status: 200, body: Array("ok".utf8)) }
        let port = try server.start(host: "127.0.0.1", port: 0)
        defer { server.stop() }
        let first = try #require(LoopbackClient(port: port))
        let second = try #require(LoopbackClient(port: port))
        // The two held connections are served, so the daemon has accepted them before the third arrives.
        first.send(Array("GET /a HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
        second.send(Array("GET /b HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
        #expect(String(decoding: first.receiveHead(), as: UTF8.self).hasPrefix("HTTP/1.1 200"))
        #expect(String(decoding: second.receiveHead(), as: UTF8.self).hasPrefix("HTTP/1.1 200"))
        let third = try #require(LoopbackClient(port: port))
        third.send(Self.request)
        #expect(third.receiveUntilClosed() == [], "the third connection of one address was served")
        // Once one of the two closes, the address may connect again.
        withExtendedLifetime(first) {}
        _ = consume first
        var answered = false
        for _ in 0..<50 where !answered {
            let again = try #require(LoopbackClient(port: port))
            again.send(Self.request)
            answered = String(decoding: again.receiveUntilClosed(), as: UTF8.self).hasPrefix("HTTP/1.1 200")
        }
        #expect(answered)
        withExtendedLifetime(second) {}
    }

    @Test("credential comparison: equal only for equal octets, whatever the lengths")
    func credentialComparison() {
        let secret = Array("t-alice-0123456789".utf8)
        #expect(SyncEngine.constantTimeEqual(secret, secret))
        #expect(!SyncEngine.constantTimeEqual(secret, Array(secret.dropLast())))
        #expect(!SyncEngine.constantTimeEqual(secret, secret + [0]))
        #expect(!SyncEngine.constantTimeEqual(secret, []))
        #expect(!SyncEngine.constantTimeEqual(secret, Array("t-alice-0123456780".utf8)))
    }
}
