import Dispatch
import SynchroHTTP
import SynchroServer
import Synchronization
import Testing

/// Answers `id:<X-Request-Id>:<body>` so each client can check it got its own answer.
private struct IdentifyingHandler: HTTPHandler {
    let counter: CallCounter

    func handle(_ request: HTTPRequest) -> HTTPResponse {
        counter.record()
        let id = request.headers.single("X-Request-Id") ?? "?"
        return HTTPResponse(status: 200, body: Array("id:\(id):".utf8) + request.body)
    }
}

private func identifiedRequest(_ id: String) -> TransportRequest {
    .post(
        "/sync/pull", Array("{\"request\":\"\(id)\"}".utf8),
        headers: [("Content-Type", "application/json"), ("X-Request-Id", id)])
}

private func isAnswer(_ result: Result<TransportResponse, TransportError>, to id: String) -> Bool {
    guard case .success(let response) = result else { return false }
    return response.status == 200 && response.body == Array("id:\(id):{\"request\":\"\(id)\"}".utf8)
}

@Suite("Concurrent clients")
struct ConcurrencyTests {
    @Test("fifty requests from ten threads, each with its own transport, are all answered correctly")
    func fiftyConcurrentRequests() throws {
        let counter = CallCounter()
        let server = HTTPServer(handler: IdentifyingHandler(counter: counter))
        let port = try server.start()
        defer { server.stop() }
        let joins = (0..<10).map { thread in
            inBackground { () -> [Bool] in
                guard let transport = try? makeTransport(port: port) else { return [false] }
                return (0..<5).map { index in
                    let id = "\(thread)-\(index)"
                    return isAnswer(outcome(transport, identifiedRequest(id)), to: id)
                }
            }
        }
        let results = joins.flatMap { $0() }
        #expect(results.count == 50)
        #expect(results.allSatisfy { $0 })
        #expect(counter.count == 50)
    }

    @Test("ten requests are inside the handler at the same time: one blocked handler stalls no other")
    func handlersRunInParallel() throws {
        let gate = Gate()
        let handler = HTTPClosureHandler { request in
            gate.pass()
            return HTTPResponse(status: 200, body: request.body)
        }
        let server = HTTPServer(handler: handler)
        let port = try server.start()
        defer { server.stop() }
        let joins = (0..<10).map { index in
            inBackground { () -> Bool in
                guard let transport = try? makeTransport(port: port) else { return false }
                let body = Array("\(index)".utf8)
                guard case .success(let response) = outcome(transport, .post("/sync/pull", body)) else { return false }
                return response.body == body
            }
        }
        let arrived = (0..<10).map { _ in gate.awaitArrival() }
        gate.release(10)
        #expect(arrived.allSatisfy { $0 })
        #expect(joins.map { $0() }.allSatisfy { $0 })
    }

    @Test("one transport shared by several threads serializes its requests and answers every one")
    func sharedTransport() throws {
        let counter = CallCounter()
        try withLoopbackServer(handler: IdentifyingHandler(counter: counter)) { _, transport in
            let joins = (0..<4).map { thread in
                inBackground { () -> [Bool] in
                    (0..<5).map { index in
                        let id = "shared-\(thread)-\(index)"
                        return isAnswer(outcome(transport, identifiedRequest(id)), to: id)
                    }
                }
            }
            let results = joins.flatMap { $0() }
            #expect(results.count == 20)
            #expect(results.allSatisfy { $0 })
            #expect(counter.count == 20)
        }
    }
}
