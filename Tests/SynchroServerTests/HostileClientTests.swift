import Foundation
@testable import SynchroServer
import Testing
import _SeedkitTestSupport

/// A curious or hostile client of the reference server (issue #19): one address cannot hold every connection,
/// a slow client cannot hold one for ever, credentials compare without revealing their length, and guessing them
/// is held to a few tries per window and address.
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

    @Test(
        "a client sending its request one line (or body octet) at a time is closed at the request deadline",
        arguments: ["header fields", "body"])
    func slowClient(part: String) throws {
        var configuration = HTTPServer.Configuration()
        configuration.requestDeadline = .milliseconds(500)
        // The idle timeout is far away, and every line restarts it anyway: only the deadline can close the client.
        configuration.connectionTimeout = .seconds(60)
        let server = HTTPServer(configuration: configuration) { _ in HTTPResponse(status: 200, body: Array("ok".utf8)) }
        let port = try server.start(host: "127.0.0.1", port: 0)
        defer { server.stop() }
        let slow = try #require(LoopbackClient(port: port))
        let head = part == "body" ? "POST /slow HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n" : "GET /slow HTTP/1.1\r\n"
        slow.send(Array(head.utf8))
        var sent = 0
        var closed = false
        // The pause between two pieces ends early when the server closes: no sleep decides the outcome.
        while !closed && sent < 200 {
            slow.send(Array((part == "body" ? "x" : "X-Slow-\(sent): 1\r\n").utf8))
            sent += 1
            if sent == 2 {
                let other = try #require(LoopbackClient(port: port))
                other.send(Self.request)
                #expect(
                    String(decoding: other.receiveUntilClosed(), as: UTF8.self).hasPrefix("HTTP/1.1 200"),
                    "another client was not served while the slow one held its connection")
            }
            closed = slow.closes(within: .milliseconds(100))
        }
        #expect(closed, "the slow client still held its connection after \(sent) pieces")
        // 500 ms of 100 ms pauses: a handful of pieces; 100 is a bound no loaded machine reaches.
        #expect(sent < 100)
        #expect(slow.receiveUntilClosed() == [], "a partial request was answered")
        let after = try #require(LoopbackClient(port: port))
        after.send(Self.request)
        #expect(String(decoding: after.receiveUntilClosed(), as: UTF8.self).hasPrefix("HTTP/1.1 200"))
    }

    @Test("the deadline covers receiving only: a handler slower than it still answers, on a kept connection")
    func slowHandlerStillAnswers() throws {
        var configuration = HTTPServer.Configuration()
        configuration.requestDeadline = .milliseconds(200)
        // The handler's time is the condition under test (three deadlines), not a wait for another thread.
        let server = HTTPServer(configuration: configuration) { _ in
            usleep(600_000)
            return HTTPResponse(status: 200, body: Array("ok".utf8))
        }
        let port = try server.start(host: "127.0.0.1", port: 0)
        defer { server.stop() }
        let client = try #require(LoopbackClient(port: port))
        for _ in 0..<2 {
            client.send(Array("GET /a HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
            #expect(String(decoding: client.receiveHead(), as: UTF8.self).hasPrefix("HTTP/1.1 200"))
            #expect(client.receive(count: 2) == Array("ok".utf8))
        }
    }

    @Test("after the allowed failed bearer checks an address gets 429 with Retry-After until the window passes")
    func failedAuthenticationLimit() throws {
        let server = try RunningServer(
            rows: 10, failedAuthenticationLimit: FailedAuthenticationLimit(failures: 3, windowSeconds: 60))
        let guesser = "127.0.0.2", neighbour = "127.0.0.1"
        for attempt in 0..<3 {
            let reply = try Self.connect(server, from: guesser, bearer: "guess-\(attempt)")
            #expect(reply.status == 401)
        }
        // Past the limit even the right credential from that address is refused before it is looked at.
        let refused = try Self.connect(server, from: guesser, bearer: "secret-alice")
        #expect(refused.status == 429)
        #expect(refused.retryAfter == "60")
        #expect(refused.text.contains("\"retry_later\""))
        #expect(!refused.text.contains("secret") && !refused.text.contains("guess"))
        // Another address is served, and its own failure counts for it alone.
        #expect(try Self.connect(server, from: neighbour, bearer: "secret-alice").status == 200)
        #expect(try Self.connect(server, from: neighbour, bearer: "guess").status == 401)
        #expect(try Self.connect(server, from: neighbour, bearer: "secret-bob").status == 200)
        // The refusal lasts until the oldest counted failure leaves the window (the server's clock).
        server.clock.advance(microseconds: 59_000_000)
        let later = try Self.connect(server, from: guesser, bearer: "secret-alice")
        #expect(later.status == 429 && later.retryAfter == "1")
        server.clock.advance(microseconds: 1_000_000)
        #expect(try Self.connect(server, from: guesser, bearer: "secret-alice").status == 200)
    }

    /// A raw `POST /sync/connect` from `address` (an address of 127/8) with `bearer`.
    static func connect(_ server: RunningServer, from address: String, bearer: String) throws -> RawReply {
        let body = """
            {"client_id":"c-\(UUID().uuidString.lowercased())","platform":"ios","app_version":"1.0.0",\
            "protocol_version":3,"schema":{"version":0,"hash":""},"scope_set_version":0,"known_scopes":{}}
            """
        let client = try #require(LoopbackClient(port: server.port, from: address))
        client.send(Array("""
            POST /sync/connect HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer \(bearer)\r\n\
            Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)
            """.utf8))
        return RawReply(String(decoding: client.receiveUntilClosed(), as: UTF8.self))
    }

    /// Status, `Retry-After` and the whole text of a raw response.
    struct RawReply {
        let status: Int
        let retryAfter: String?
        let text: String

        init(_ text: String) {
            self.text = text
            let lines = text.components(separatedBy: "\r\n")
            status = lines.first.flatMap { Int($0.split(separator: " ").dropFirst().first ?? "") } ?? 0
            retryAfter = lines.first { $0.lowercased().hasPrefix("retry-after:") }
                .map { String($0.dropFirst("retry-after:".count)).trimmingCharacters(in: .whitespaces) }
        }
    }
}
