import Dispatch
import Foundation
import Glibc
import SynchroServer
import Synchronization
import _SeedkitTestSupport
import Testing

/// Stopping the HTTP server while clients are still talking to it: the process must survive
/// whatever bytes arrive during `stop()` (docs/decisions.md, "libmicrohttpd connection-thread crash").
@Suite("Stopping the HTTP server under traffic")
struct HTTPServerShutdownTests {
    /// A request libmicrohttpd answers itself (505) before any handler runs, as it answers a TLS
    /// ClientHello sent to the plain HTTP port (400): both take the library's error-response path.
    static let unsupportedVersion = Array("GET / HTTP/9.9\r\nHost: 127.0.0.1\r\n\r\n".utf8)

    @Test("a request libmicrohttpd rejects itself, arriving while the server stops, never crashes the process")
    func malformedRequestDuringStop() throws {
        var configuration = HTTPServer.Configuration()
        configuration.shutdownGracePeriod = .zero
        for _ in 0..<300 {
            let server = HTTPServer(configuration: configuration) { _ in HTTPResponse(status: 200) }
            let port = try server.start()
            // One answered request first: each connection is then accepted and idle when the bytes arrive.
            let clients = (0..<3).compactMap { _ in LoopbackClient(port: port) }
            for client in clients {
                client.send(Array("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8))
                _ = client.receiveHead()
            }
            for client in clients { client.send(Self.unsupportedVersion) }
            server.stop()
        }
    }

    @Test("requests that keep arriving on kept-alive connections while the server stops are answered or cut off")
    func trafficDuringStop() throws {
        let request = Array("POST /sync/pull HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n\r\n{}".utf8)
        for round in 0..<100 {
            let server = HTTPServer { _ in HTTPResponse(status: 200) }
            let port = try server.start()
            let stopped = Atomic<Bool>(false)
            let clients = DispatchGroup()
            for _ in 0..<4 {
                clients.enter()
                Thread {
                    defer { clients.leave() }
                    while !stopped.load(ordering: .acquiring), let client = LoopbackClient(port: port) {
                        for _ in 0..<3 {
                            client.send(request)
                            guard !client.receiveHead().isEmpty else { break }
                        }
                    }
                }.start()
            }
            // Stop at varying points of the exchanges.
            usleep(UInt32(200 + round % 10 * 150))
            server.stop()
            stopped.store(true, ordering: .releasing)
            #expect(clients.wait(timeout: .now() + 30) == .success)
        }
    }

    @Test("a handler still running when the grace period ends delays stop until it returns; its answer is dropped")
    func handlerPastGracePeriod() throws {
        let arrived = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let returned = Atomic<Bool>(false)
        var configuration = HTTPServer.Configuration()
        configuration.shutdownGracePeriod = .milliseconds(50)
        let server = HTTPServer(configuration: configuration) { _ in
            arrived.signal()
            _ = release.wait(timeout: .now() + 10)
            returned.store(true, ordering: .releasing)
            return HTTPResponse(status: 200, body: Array("late".utf8))
        }
        let port = try server.start()
        let client = try #require(LoopbackClient(port: port))
        client.send(Array("GET /slow HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8))
        #expect(arrived.wait(timeout: .now() + 10) == .success)
        let stopped = DispatchSemaphore(value: 0)
        Thread {
            server.stop()
            stopped.signal()
        }.start()
        // The grace period passes; stop must still be waiting for the handler.
        #expect(stopped.wait(timeout: .now() + .milliseconds(300)) == .timedOut)
        release.signal()
        #expect(stopped.wait(timeout: .now() + 10) == .success)
        let handlerReturned = returned.load(ordering: .acquiring)
        #expect(handlerReturned)
        #expect(client.receiveUntilClosed() == [])
    }

    @Test("many handlers block at once and every one is answered")
    func blockingHandlersRunConcurrently() throws {
        let count = 24
        let inside = Atomic<Int>(0)
        let allInside = DispatchSemaphore(value: 0)
        let server = HTTPServer { request in
            if inside.add(1, ordering: .acquiringAndReleasing).newValue == count { allInside.signal() }
            // Every handler waits until all of them are inside at the same time.
            _ = allInside.wait(timeout: .now() + 10)
            allInside.signal()
            return HTTPResponse(status: 200, body: Array(request.path.utf8))
        }
        let port = try server.start()
        defer { server.stop() }
        let clients = (0..<count).compactMap { _ in LoopbackClient(port: port) }
        #expect(clients.count == count)
        for (index, client) in clients.enumerated() {
            client.send(Array("GET /\(index) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".utf8))
        }
        for (index, client) in clients.enumerated() {
            let answer = String(decoding: client.receiveUntilClosed(), as: UTF8.self)
            #expect(answer.hasPrefix("HTTP/1.1 200"), "client \(index)")
            #expect(answer.hasSuffix("\r\n\r\n/\(index)"), "client \(index)")
        }
    }
}
