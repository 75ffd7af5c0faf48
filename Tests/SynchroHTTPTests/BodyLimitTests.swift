import SynchroHTTP
import SynchroServer
import Testing

/// Counts handler calls and echoes the body length.
private func countingHandler(_ counter: CallCounter) -> HTTPClosureHandler {
    HTTPClosureHandler { request in
        counter.record()
        return HTTPResponse(status: 200, body: Array(String(request.body.count).utf8))
    }
}

@Suite("Request body limit")
struct BodyLimitTests {
    @Test("a push one octet over 1,048,576 gets the invalid_request envelope and never reaches the handler")
    func defaultPushLimit() throws {
        let counter = CallCounter()
        // libcurl announces bodies over 1 MiB with `Expect: 100-continue`: the server answers before
        // the body is sent.
        try withLoopbackServer(handler: countingHandler(counter)) { server, transport in
            #expect(server.configuration.maximumBodyBytes == 1_048_576)
            let response = try transport.send(.post("/sync/push", [UInt8](repeating: 0x20, count: 1_048_577)))
            #expect(response.status == 400)
            #expect(response.headers.single("Content-Type") == "application/json")
            let text = String(decoding: response.body, as: UTF8.self)
            #expect(
                text == #"{"error":{"code":"invalid_request","message":"request body too large","retryable":false}}"#)
            #expect(counter.count == 0)
        }
    }

    @Test("a body of exactly the limit is accepted")
    func bodyAtLimit() throws {
        let counter = CallCounter()
        var configuration = HTTPServer.Configuration()
        configuration.maximumBodyBytes = 1_000
        try withLoopbackServer(configuration, handler: countingHandler(counter)) { _, transport in
            let response = try transport.send(.post("/sync/push", [UInt8](repeating: 0x41, count: 1_000)))
            #expect(response.status == 200)
            #expect(response.body == Array("1000".utf8))
            #expect(counter.count == 1)
        }
    }

    @Test("a body announced with 100-continue but within the limit is read in full")
    func continueWithinLimit() throws {
        let counter = CallCounter()
        var configuration = HTTPServer.Configuration()
        configuration.maximumBodyBytes = 2_097_152
        try withLoopbackServer(configuration, handler: countingHandler(counter)) { _, transport in
            let response = try transport.send(.post("/sync/push", [UInt8](repeating: 0x42, count: 1_500_000)))
            #expect(response.status == 200)
            #expect(response.body == Array("1500000".utf8))
            #expect(counter.count == 1)
        }
    }

    @Test("a body over the limit sent without 100-continue is drained and answered with the configured response")
    func configuredOversizeResponse() throws {
        let counter = CallCounter()
        var configuration = HTTPServer.Configuration()
        configuration.maximumBodyBytes = 1_000
        configuration.oversizeResponse = { head in
            HTTPResponse(status: 413, headers: [("X-Path", head.path)], body: Array("too big".utf8))
        }
        try withLoopbackServer(configuration, handler: countingHandler(counter)) { _, transport in
            let response = try transport.send(.post("/sync/push", [UInt8](repeating: 0x43, count: 5_000)))
            #expect(response.status == 413)
            #expect(response.body == Array("too big".utf8))
            #expect(response.headers.single("X-Path") == "/sync/push")
            #expect(counter.count == 0)
            // The connection stays usable for the next request.
            let next = try transport.send(.post("/sync/push", [UInt8](repeating: 0x43, count: 10)))
            #expect(next.status == 200)
            #expect(counter.count == 1)
        }
    }

    @Test("a body far beyond the drain allowance is cut off and never reaches the handler")
    func beyondDrainAllowance() throws {
        let counter = CallCounter()
        var configuration = HTTPServer.Configuration()
        configuration.maximumBodyBytes = 1_000
        configuration.oversizeDrainBytes = 1_000
        try withLoopbackServer(configuration, handler: countingHandler(counter)) { _, transport in
            // Either the rejection arrives or the connection is closed under the upload; both are fine.
            switch outcome(transport, .post("/sync/push", [UInt8](repeating: 0x44, count: 200_000))) {
            case .success(let response): #expect(response.status == 400)
            case .failure(let error): #expect(error != .timedOut)
            }
            #expect(counter.count == 0)
        }
    }

    @Test("a chunked body over the limit is counted while reading and never reaches the handler")
    func chunkedOverLimit() throws {
        let counter = CallCounter()
        var configuration = HTTPServer.Configuration()
        configuration.maximumBodyBytes = 1_000
        let server = HTTPServer(configuration: configuration, handler: countingHandler(counter))
        let port = try server.start()
        defer { server.stop() }
        let chunks = [[UInt8]](repeating: [UInt8](repeating: 0x45, count: 600), count: 5)
        let raw = try #require(
            RawHTTPClient.exchange(port: port, RawHTTPClient.chunkedPost("/sync/push", chunks: chunks)))
        let response = try #require(RawHTTPClient.parse(raw))
        #expect(response.status == 400)
        #expect(String(decoding: response.body, as: UTF8.self).contains("request body too large"))
        #expect(counter.count == 0)
    }

    @Test("a chunked body within the limit is reassembled across chunks")
    func chunkedWithinLimit() throws {
        let counter = CallCounter()
        var configuration = HTTPServer.Configuration()
        configuration.maximumBodyBytes = 1_000
        let server = HTTPServer(configuration: configuration, handler: countingHandler(counter))
        let port = try server.start()
        defer { server.stop() }
        let chunks = [[UInt8]](repeating: [UInt8](repeating: 0x46, count: 300), count: 3)
        let raw = try #require(
            RawHTTPClient.exchange(port: port, RawHTTPClient.chunkedPost("/sync/push", chunks: chunks)))
        let response = try #require(RawHTTPClient.parse(raw))
        #expect(response.status == 200)
        #expect(response.body == Array("900".utf8))
        #expect(counter.count == 1)
    }

    @Test("a chunked body beyond the drain allowance closes the connection without calling the handler")
    func chunkedBeyondDrain() throws {
        let counter = CallCounter()
        var configuration = HTTPServer.Configuration()
        configuration.maximumBodyBytes = 1_000
        configuration.oversizeDrainBytes = 2_000
        let server = HTTPServer(configuration: configuration, handler: countingHandler(counter))
        let port = try server.start()
        defer { server.stop() }
        let chunks = [[UInt8]](repeating: [UInt8](repeating: 0x47, count: 1_000), count: 50)
        let raw = RawHTTPClient.exchange(port: port, RawHTTPClient.chunkedPost("/sync/push", chunks: chunks))
        #expect(raw.flatMap(RawHTTPClient.parse)?.status != 200)
        #expect(counter.count == 0)
    }
}
