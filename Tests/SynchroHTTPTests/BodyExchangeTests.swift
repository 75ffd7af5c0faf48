import SynchroHTTP
import SynchroServer
import Testing

@Suite("Request and response bodies over loopback")
struct BodyExchangeTests {
    @Test("the server receives and returns the exact body octets, including zero bytes and non-ASCII")
    func echoesExactOctets() throws {
        let body: [UInt8] = [0x00, 0x7B, 0x22, 0xC3, 0xA9, 0x00, 0xF0, 0x9F, 0x98, 0x80, 0xFF, 0xFE, 0x0D, 0x0A, 0x00]
        try withLoopbackServer(handler: EchoHandler()) { _, transport in
            let response = try transport.send(.post("/sync/push", body))
            #expect(response.status == 200)
            #expect(response.body == body)
            #expect(response.headers.single("Content-Length") == String(body.count))
            #expect(response.headers.single("X-Method") == "POST")
        }
    }

    @Test("a large body arriving in many reads is reassembled in order")
    func reassemblesLargeBody() throws {
        let body = scrambledOctets(count: 1_048_576)
        try withLoopbackServer(handler: EchoHandler()) { _, transport in
            let response = try transport.send(.post("/sync/push", body))
            #expect(response.status == 200)
            #expect(response.body.count == body.count)
            #expect(response.body == body)
        }
    }

    @Test("an empty POST body and a GET both reach the handler with no body")
    func emptyBodies() throws {
        try withLoopbackServer(handler: EchoHandler()) { _, transport in
            let post = try transport.send(.post("/sync/pull", []))
            #expect(post.status == 200)
            #expect(post.body.isEmpty)
            #expect(post.headers.single("Content-Length") == "0")
            let get = try transport.send(.get("/ready"))
            #expect(get.status == 200)
            #expect(get.headers.single("X-Method") == "GET")
        }
    }

    @Test("the path reaches the handler without the query, and the query verbatim")
    func splitsPathAndQuery() throws {
        try withLoopbackServer(handler: EchoHandler()) { _, transport in
            let withQuery = try transport.send(.get("/sync/tables?name=a%20b&x=1"))
            #expect(withQuery.headers.single("X-Path") == "/sync/tables")
            #expect(withQuery.headers.single("X-Query") == "name=a%20b&x=1")
            let plain = try transport.send(.get("/sync/schema"))
            #expect(plain.headers.single("X-Path") == "/sync/schema")
            #expect(plain.headers.single("X-Query") == "<none>")
        }
    }

    @Test("a JSON response carries application/json and the status the handler chose")
    func jsonResponse() throws {
        let handler = HTTPClosureHandler { _ in
            .jsonError(status: 409, code: "client_retired", message: "client retired", retryable: false)
        }
        try withLoopbackServer(handler: handler) { _, transport in
            let response = try transport.send(.post("/sync/connect", Array("{}".utf8)))
            #expect(response.status == 409)
            #expect(response.headers.values(for: "content-type") == ["application/json"])
            let text = String(decoding: response.body, as: UTF8.self)
            #expect(text == #"{"error":{"code":"client_retired","message":"client retired","retryable":false}}"#)
        }
    }

    @Test("a response the server cannot send becomes a 500 error envelope instead of a hang")
    func unsendableResponse() throws {
        let handler = HTTPClosureHandler { request in
            request.path == "/bad-status"
                ? HTTPResponse(status: 42)
                : HTTPResponse(status: 200, headers: [("X-Broken", "a\r\nInjected: yes")])
        }
        try withLoopbackServer(handler: handler) { _, transport in
            for path in ["/bad-status", "/bad-header"] {
                let response = try transport.send(.get(path))
                #expect(response.status == 500)
                #expect(response.headers.first("Injected") == nil)
                #expect(String(decoding: response.body, as: UTF8.self).contains("sync_integrity_failure"))
            }
        }
    }

    @Test("the async send returns the same response as the blocking one")
    func asyncSend() async throws {
        let server = HTTPServer(handler: EchoHandler())
        let port = try server.start()
        defer { server.stop() }
        let transport = try makeTransport(port: port)
        let response = try await transport.send(.post("/sync/pull", Array("{\"a\":1}".utf8)))
        #expect(response.status == 200)
        #expect(response.body == Array("{\"a\":1}".utf8))
    }
}
