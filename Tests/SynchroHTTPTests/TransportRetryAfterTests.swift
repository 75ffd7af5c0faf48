import Foundation
import SynchroHTTP
import SynchroServer
import Testing

@Suite("Retry-After of a transport response")
struct TransportRetryAfterTests {
    @Test("a 503 response's single Retry-After is read in both forms; a repeated one is ignored")
    func fromResponse() throws {
        let now = Date(timeIntervalSince1970: 784_111_777 - 30)
        let handler = HTTPClosureHandler { request in
            let value = request.path == "/date" ? "Sun, 06 Nov 1994 08:49:37 GMT" : "5"
            var response = HTTPResponse.jsonError(
                status: 503, code: "capture_pending", message: "capture pending", retryable: true,
                headers: [("Retry-After", value)])
            if request.path == "/twice" { response.headers.append(name: "Retry-After", value: "6") }
            return response
        }
        try withLoopbackServer(handler: handler) { _, transport in
            let once = try transport.send(.get("/once"))
            #expect(once.status == 503)
            #expect(once.retryAfter(now: now) == .seconds(5))
            #expect(try transport.send(.get("/date")).retryAfter(now: now) == .seconds(30))
            let twice = try transport.send(.get("/twice"))
            #expect(twice.headers.values(for: "Retry-After") == ["5", "6"])
            #expect(twice.retryAfter(now: now) == nil)
        }
    }
}
