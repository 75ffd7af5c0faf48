import SynchroHTTP
import SynchroServer
import Testing

/// Serves `body` with `Content-Encoding: encoding`.
private func encodedHandler(_ encoding: String, _ body: [UInt8]) -> HTTPClosureHandler {
    HTTPClosureHandler { _ in
        .json(body: body, headers: [("Content-Encoding", encoding)])
    }
}

@Suite("Compressed responses")
struct ContentEncodingTests {
    @Test("a gzip body made by gzip(1) is decoded to the exact plain octets")
    func gzipResponse() throws {
        let handler = encodedHandler("gzip", ContentEncodingFixtures.repetitiveGzip)
        try withLoopbackServer(handler: handler) { _, transport in
            let response = try transport.send(.get("/sync/schema"))
            #expect(response.status == 200)
            #expect(response.body == ContentEncodingFixtures.repetitivePlainText)
            #expect(response.headers.single("Content-Length") == "72")
        }
    }

    @Test("a deflate (zlib) body is decoded to the exact plain octets")
    func deflateResponse() throws {
        let handler = encodedHandler("deflate", ContentEncodingFixtures.repetitiveDeflate)
        try withLoopbackServer(handler: handler) { _, transport in
            let body = try transport.send(.get("/sync/schema")).body
            #expect(body == ContentEncodingFixtures.repetitivePlainText)
        }
    }

    @Test("binary octets in a multi-block gzip member survive decoding")
    func storedGzipResponse() throws {
        let plain = scrambledOctets(count: 200_000)
        let handler = encodedHandler("gzip", ContentEncodingFixtures.storedGzip(plain))
        try withLoopbackServer(handler: handler) { _, transport in
            let body = try transport.send(.get("/sync/schema")).body
            #expect(body == plain)
        }
    }

    @Test("the response size limit applies to the decoded body, not the compressed one")
    func decodedSizeLimit() throws {
        let handler = encodedHandler("gzip", ContentEncodingFixtures.repetitiveGzip)
        try withLoopbackServer(transport: { $0.maximumResponseBytes = 4_096 }, handler: handler) { _, transport in
            #expect(outcome(transport, .get("/sync/schema")) == .failure(.tooLarge(limit: 4_096)))
        }
    }

    @Test("a corrupt gzip body is a transport failure, never a silently truncated body")
    func corruptGzip() throws {
        var corrupt = ContentEncodingFixtures.repetitiveGzip
        corrupt[20] ^= 0xFF
        try withLoopbackServer(handler: encodedHandler("gzip", corrupt)) { _, transport in
            guard case .failure(.other) = outcome(transport, .get("/sync/schema")) else {
                Issue.record("a corrupt gzip body was accepted")
                return
            }
        }
    }
}
