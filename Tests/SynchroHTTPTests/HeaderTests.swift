import SynchroHTTP
import SynchroProtocol
import SynchroServer
import Testing

/// Answers with the request's header fields, one `name: value` line each, in received order.
private struct HeaderListHandler: HTTPHandler {
    func handle(_ request: HTTPRequest) -> HTTPResponse {
        let lines = request.headers.map { "\($0.name): \($0.value)\n" }.joined()
        return HTTPResponse(status: 200, body: Array(lines.utf8))
    }
}

private func receivedLines(_ response: TransportResponse) -> [String] {
    String(decoding: response.body, as: UTF8.self).split(separator: "\n").map(String.init)
}

@Suite("Header fields in both directions")
struct HeaderTests {
    @Test("repeated request fields reach the handler separately and in order")
    func repeatedRequestFields() throws {
        let sent: HTTPHeaders = [
            ("Authorization", "Bearer first"), ("X-Sequence", "1"), ("Authorization", "Bearer second"),
            ("Content-Type", "application/json"), ("Content-Type", "text/plain"), ("X-Sequence", "2"),
        ]
        try withLoopbackServer(handler: HeaderListHandler()) { _, transport in
            let response = try transport.send(.post("/sync/push", Array("{}".utf8), headers: sent))
            let interesting = Set(["authorization", "x-sequence", "content-type"])
            let received = receivedLines(response).filter {
                interesting.contains(String($0.prefix { $0 != ":" }).lowercased())
            }
            #expect(received == sent.map { "\($0.name): \($0.value)" })
        }
    }

    @Test("lookups ignore ASCII case and single() refuses a repeated field")
    func headerLookups() {
        let headers: HTTPHeaders = [("authorization", "Bearer a"), ("AUTHORIZATION", "Bearer b"), ("X-One", "1")]
        #expect(headers.values(for: "Authorization") == ["Bearer a", "Bearer b"])
        #expect(headers.count(of: "Authorization") == 2)
        #expect(headers.single("Authorization") == nil)
        #expect(headers.single("x-one") == "1")
        #expect(headers.first("missing") == nil)
        #expect(!"K".equalsIgnoringASCIICaseForTesting("\u{212A}"))
    }

    @Test("repeated response fields reach the client separately and in order")
    func repeatedResponseFields() throws {
        let handler = HTTPClosureHandler { _ in
            HTTPResponse(status: 200, headers: [("X-Multi", "a"), ("X-Other", "o"), ("X-Multi", "b")])
        }
        try withLoopbackServer(handler: handler) { _, transport in
            let response = try transport.send(.get("/ready"))
            #expect(response.headers.values(for: "x-multi") == ["a", "b"])
            #expect(response.headers.single("x-multi") == nil)
        }
    }

    @Test("a protocol POST carries exactly one Authorization, Content-Type and X-App-Version")
    func protocolPostHeaders() throws {
        try withLoopbackServer(handler: HeaderListHandler()) { _, transport in
            let request = TransportRequest.protocolPost(
                path: "/sync/connect", body: Array("{}".utf8), credential: "token-123", appVersion: "1.4.0")
            let lines = receivedLines(try transport.send(request))
            #expect(lines.filter { $0.lowercased().hasPrefix("authorization:") } == ["Authorization: Bearer token-123"])
            #expect(lines.filter { $0.lowercased().hasPrefix("content-type:") } == ["Content-Type: application/json"])
            #expect(lines.filter { $0.lowercased().hasPrefix("x-app-version:") } == ["X-App-Version: 1.4.0"])
            #expect(lines.filter { $0.lowercased().hasPrefix("x-client-version:") }.isEmpty)
            #expect(lines.contains { $0.lowercased().hasPrefix("accept-encoding:") && $0.contains("gzip") })
        }
    }

    @Test("a POST without Content-Type is sent without one, not with libcurl's form default")
    func noImplicitContentType() throws {
        try withLoopbackServer(handler: HeaderListHandler()) { _, transport in
            let lines = receivedLines(try transport.send(.post("/sync/push", Array("{}".utf8), headers: [])))
            #expect(!lines.contains { $0.lowercased().hasPrefix("content-type") })
        }
    }

    @Test("an empty header value is sent as an empty field, not dropped")
    func emptyHeaderValue() throws {
        try withLoopbackServer(handler: HeaderListHandler()) { _, transport in
            let headers: HTTPHeaders = [("Content-Type", "application/json"), ("X-Empty", "")]
            let lines = receivedLines(try transport.send(.post("/sync/push", [], headers: headers)))
            #expect(lines.contains("X-Empty: "))
        }
    }

    @Test("header fields that would split the header block are refused before sending")
    func refusesHeaderInjection() throws {
        let counter = CallCounter()
        let handler = HTTPClosureHandler { _ in
            counter.record()
            return HTTPResponse(status: 200)
        }
        try withLoopbackServer(handler: handler) { _, transport in
            let injected: [HTTPHeaders] = [
                [("X-Value", "a\r\nAuthorization: Bearer x")], [("X Name", "v")], [("", "v")], [("X-Nul", "a\u{0}b")],
            ]
            for headers in injected {
                let request = TransportRequest(method: .get, path: "/ready", headers: headers)
                #expect(outcome(transport, request) == .failure(.invalidRequest))
            }
            #expect(outcome(transport, .get("relative")) == .failure(.invalidRequest))
            #expect(outcome(transport, .get("/with space")) == .failure(.invalidRequest))
            #expect(counter.count == 0)
        }
    }
}

extension String {
    /// Exposes the lookup rule: only ASCII letters fold (the Kelvin sign is not `K`).
    fileprivate func equalsIgnoringASCIICaseForTesting(_ other: String) -> Bool {
        HTTPHeaders([HTTPHeader(name: self, value: "")]).first(other) != nil
    }
}
