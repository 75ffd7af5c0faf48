import SynchroHTTP
import SynchroServer
import Testing

@Suite("Transport failures and privacy")
struct TransportErrorTests {
    @Test("a closed port is connectionRefused")
    func refused() throws {
        let server = HTTPServer(handler: EchoHandler())
        let port = try server.start()
        server.stop()
        #expect(outcome(try makeTransport(port: port), .get("/ready")) == .failure(.connectionRefused))
    }

    @Test("TLS against a plain HTTP server and an unreadable CA file are tls failures")
    func tlsFailures() throws {
        try withLoopbackServer(handler: EchoHandler()) { server, _ in
            let port = try #require(server.port)
            let https = try CurlTransport(configuration: .init(baseURL: "https://127.0.0.1:\(port)"))
            #expect(outcome(https, .get("/ready")) == .failure(.tls))
            var configuration = CurlTransport.Configuration(baseURL: "https://127.0.0.1:\(port)")
            configuration.caFile = "/nonexistent/seedkit-ca.pem"
            #expect(outcome(try CurlTransport(configuration: configuration), .get("/ready")) == .failure(.tls))
        }
    }

    @Test("a response body over the limit is tooLarge, whether announced by Content-Length or not")
    func responseTooLarge() throws {
        let handler = HTTPClosureHandler { _ in
            HTTPResponse(status: 200, body: [UInt8](repeating: 0x61, count: 5_000))
        }
        try withLoopbackServer(transport: { $0.maximumResponseBytes = 4_999 }, handler: handler) { server, transport in
            #expect(outcome(transport, .get("/sync/pull")) == .failure(.tooLarge(limit: 4_999)))
            let exact = try makeTransport(port: try #require(server.port)) { $0.maximumResponseBytes = 5_000 }
            let body = try exact.send(.get("/sync/pull")).body
            #expect(body.count == 5_000)
        }
    }

    @Test(
        "base URLs that are not http(s) or carry credentials are refused",
        arguments: ["ftp://127.0.0.1", "127.0.0.1:80", "http://", "http://user:secret@127.0.0.1", "http://a b"])
    func invalidBaseURL(baseURL: String) {
        #expect(throws: TransportError.invalidRequest) {
            try CurlTransport(configuration: .init(baseURL: baseURL))
        }
    }

    @Test("descriptions of requests, responses and errors never contain credentials, bodies or queries")
    func privacy() {
        let secret = "s3cr3t-token"
        let request = TransportRequest.protocolPost(
            path: "/sync/pull?cursor=\(secret)", body: Array("{\"row\":\"\(secret)\"}".utf8), credential: secret,
            appVersion: "1.0.0")
        let response = TransportResponse(status: 200, headers: [("Set-Cookie", secret)], body: Array(secret.utf8))
        let errors: [TransportError] = [
            .connectionRefused, .timedOut, .cancelled, .tooLarge(limit: 1), .tls, .invalidRequest, .other(code: 56),
        ]
        let head = HTTPRequestHead(
            method: "POST", path: "/sync/pull", query: "cursor=\(secret)",
            headers: [("Authorization", "Bearer \(secret)")])
        let serverRequest = HTTPRequest(head: head, body: Array(secret.utf8))
        var texts = [
            "\(request)", String(reflecting: request), "\(response)", String(reflecting: response),
            "\(serverRequest)", String(reflecting: serverRequest), String(reflecting: head),
        ]
        texts += errors.map(\.description)
        var dumped = ""
        dump(request, to: &dumped)
        dump(serverRequest, to: &dumped)
        texts.append(dumped)
        for text in texts {
            #expect(!text.contains(secret), "\(text)")
        }
        #expect("\(request)" == "POST /sync/pull (22-octet body)")
    }
}
