import Dispatch
import SynchroHTTP
import SynchroServer
import Synchronization
import Testing

@Suite("Starting and stopping the server")
struct ServerLifecycleTests {
    @Test("stop on an idle server closes the port and is idempotent")
    func stopIdle() throws {
        let server = HTTPServer(handler: EchoHandler())
        let port = try server.start()
        #expect(port != 0)
        #expect(server.port == port)
        server.stop()
        #expect(server.port == nil)
        server.stop()
        let transport = try makeTransport(port: port)
        #expect(outcome(transport, .get("/ready")) == .failure(.connectionRefused))
    }

    @Test("stop after traffic closes kept-alive connections, and the server can start again")
    func stopAfterTraffic() throws {
        let server = HTTPServer(handler: EchoHandler())
        let port = try server.start()
        let transport = try makeTransport(port: port)
        for index in 0..<3 {
            let response = try transport.send(.post("/sync/pull", Array("\(index)".utf8)))
            #expect(response.body == Array("\(index)".utf8))
        }
        server.stop()
        #expect(outcome(transport, .get("/ready")) == .failure(.connectionRefused))

        let newPort = try server.start()
        defer { server.stop() }
        let again = try makeTransport(port: newPort).send(.post("/sync/pull", Array("again".utf8)))
        #expect(again.body == Array("again".utf8))
    }

    @Test("stop lets a request in flight finish and delivers its response before returning")
    func stopWaitsForInFlight() throws {
        let gate = Gate()
        let handlerFinished = Atomic<Bool>(false)
        let handler = HTTPClosureHandler { request in
            gate.pass()
            handlerFinished.store(true, ordering: .releasing)
            return HTTPResponse(status: 200, body: request.body)
        }
        let server = HTTPServer(handler: handler)
        let port = try server.start()
        let transport = try makeTransport(port: port)
        let response = inBackground { outcome(transport, .post("/sync/push", Array("in flight".utf8))) }
        #expect(gate.awaitArrival())
        let stopping = DispatchSemaphore(value: 0)
        let stopped = inBackground { () -> Bool in
            stopping.signal()
            server.stop()
            return handlerFinished.load(ordering: .acquiring)
        }
        stopping.wait()
        gate.release()
        #expect(stopped())
        guard case .success(let delivered) = response() else {
            Issue.record("the in-flight request got no response")
            return
        }
        #expect(delivered.body == Array("in flight".utf8))
    }

    @Test("releasing the last reference stops the server")
    func deinitStops() throws {
        var server: HTTPServer? = HTTPServer(handler: EchoHandler())
        let port = try #require(server).start()
        let transport = try makeTransport(port: port)
        #expect(try transport.send(.get("/ready")).status == 200)
        server = nil
        #expect(outcome(transport, .get("/ready")) == .failure(.connectionRefused))
    }

    @Test("starting twice, a non-numeric host and a port in use are typed errors")
    func startFailures() throws {
        let server = HTTPServer(handler: EchoHandler())
        let port = try server.start()
        defer { server.stop() }
        #expect(throws: HTTPServerError.alreadyRunning) { try server.start() }
        #expect(throws: HTTPServerError.invalidHost) { try HTTPServer(handler: EchoHandler()).start(host: "localhost") }
        let rival = HTTPServer(handler: EchoHandler())
        #expect {
            try rival.start(port: port)
        } throws: { error in
            guard case HTTPServerError.bind = error else { return false }
            return true
        }
        #expect(rival.port == nil)
    }
}
