import Dispatch
import SynchroHTTP
import SynchroServer
import Testing

/// `/slow` waits at the gate; every other path answers at once.
private func gatedHandler(_ gate: Gate) -> HTTPClosureHandler {
    HTTPClosureHandler { request in
        if request.path == "/slow" { gate.pass() }
        return HTTPResponse(status: 200, body: Array(request.path.utf8))
    }
}

@Suite("Timeouts and cancellation")
struct TimeoutAndCancellationTests {
    @Test("a handler slower than the total timeout makes the request fail with timedOut")
    func totalTimeout() throws {
        let gate = Gate()
        let server = HTTPServer(handler: gatedHandler(gate))
        let port = try server.start()
        defer { server.stop() }
        defer { gate.release() }
        let transport = try makeTransport(port: port) { $0.totalTimeout = .milliseconds(300) }
        #expect(outcome(transport, .get("/slow")) == .failure(.timedOut))
        #expect(gate.awaitArrival(seconds: 0))
    }

    @Test("cancel() stops a request in progress and later requests until resetCancellation()")
    func cancelInProgress() throws {
        let gate = Gate()
        let server = HTTPServer(handler: gatedHandler(gate))
        let port = try server.start()
        defer { server.stop() }
        defer { gate.release() }
        let transport = try makeTransport(port: port)
        let pending = inBackground { outcome(transport, .get("/slow")) }
        #expect(gate.awaitArrival())
        transport.cancel()
        #expect(pending() == .failure(.cancelled))
        #expect(transport.isCancelled)
        #expect(outcome(transport, .get("/fast")) == .failure(.cancelled))
        transport.resetCancellation()
        #expect(try transport.send(.get("/fast")).body == Array("/fast".utf8))
    }

    @Test("cancelling the calling task stops that async request only")
    func taskCancellation() async throws {
        let gate = Gate()
        let server = HTTPServer(handler: gatedHandler(gate))
        let port = try server.start()
        defer { server.stop() }
        defer { gate.release() }
        let transport = try makeTransport(port: port)
        // On its own executor: the request must reach the server within the gate's wait even on a busy pool.
        let task = Task(executorPreference: OwnQueueExecutor()) { () -> Result<TransportResponse, TransportError> in
            do throws(TransportError) {
                return .success(try await transport.send(.get("/slow")))
            } catch {
                return .failure(error)
            }
        }
        #expect(await gate.awaitArrival())
        task.cancel()
        #expect(await task.value == .failure(.cancelled))
        #expect(!transport.isCancelled)
        #expect(try await transport.send(.get("/fast")).status == 200)
    }

    @Test("a request whose task is already cancelled never reaches the server")
    func cancelledBeforeSending() async throws {
        let counter = CallCounter()
        let handler = HTTPClosureHandler { _ in
            counter.record()
            return HTTPResponse(status: 200)
        }
        let server = HTTPServer(handler: handler)
        let port = try server.start()
        defer { server.stop() }
        let transport = try makeTransport(port: port)
        let task = Task { () -> TransportError? in
            withUnsafeCurrentTask { $0?.cancel() }
            do throws(TransportError) {
                _ = try await transport.send(.get("/fast"))
                return nil
            } catch {
                return error
            }
        }
        #expect(await task.value == .cancelled)
        #expect(counter.count == 0)
    }
}
