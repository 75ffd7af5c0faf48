import SynchroHTTP
import SynchroServer
import Testing

private func makeRouter() -> HTTPRouter {
    var router = HTTPRouter { miss, _ in
        switch miss {
        case .notFound: Array(#"{"error":{"code":"not_found"}}"#.utf8)
        case .methodNotAllowed: Array(#"{"error":{"code":"invalid_request"}}"#.utf8)
        }
    }
    router.add("GET", "/ready") { _ in .json(body: Array(#"{"ready":true}"#.utf8)) }
    router.add("POST", "/sync/push") { request in .json(body: request.body) }
    router.add("PUT", "/sync/push") { _ in HTTPResponse(status: 204) }
    return router
}

@Suite("Routing by method and path")
struct RouterTests {
    @Test("a known path with another method gets 405, the caller's body and an Allow header")
    func methodNotAllowed() throws {
        try withLoopbackServer(handler: makeRouter()) { _, transport in
            let response = try transport.send(.get("/sync/push"))
            #expect(response.status == 405)
            #expect(response.headers.values(for: "Allow") == ["POST, PUT"])
            #expect(response.headers.single("Content-Type") == "application/json")
            #expect(response.body == Array(#"{"error":{"code":"invalid_request"}}"#.utf8))
        }
    }

    @Test("an unknown path gets 404 with the caller's body and no Allow header")
    func notFound() throws {
        try withLoopbackServer(handler: makeRouter()) { _, transport in
            let response = try transport.send(.post("/sync/register", Array("{}".utf8)))
            #expect(response.status == 404)
            #expect(response.headers.first("Allow") == nil)
            #expect(response.body == Array(#"{"error":{"code":"not_found"}}"#.utf8))
        }
    }

    @Test("a matching route gets the request with its body")
    func matchingRoute() throws {
        try withLoopbackServer(handler: makeRouter()) { _, transport in
            let ready = try transport.send(.get("/ready?probe=1"))
            #expect(ready.status == 200)
            #expect(ready.body == Array(#"{"ready":true}"#.utf8))
            let push = try transport.send(.post("/sync/push", Array(#"{"a":1}"#.utf8)))
            #expect(push.body == Array(#"{"a":1}"#.utf8))
        }
    }

    @Test("methods and paths match exactly: no case folding and no trailing-slash folding")
    func exactMatching() {
        let router = makeRouter()
        #expect(
            router.match(HTTPRequestHead(method: "get", path: "/ready")).failureValue
                == .methodNotAllowed(allowed: ["GET"]))
        #expect(router.match(HTTPRequestHead(method: "GET", path: "/ready/")).failureValue == .notFound)
        #expect(router.match(HTTPRequestHead(method: "GET", path: "/READY")).failureValue == .notFound)
        #expect(router.match(HTTPRequestHead(method: "GET", path: "/ready")).failureValue == nil)
    }

    @Test("adding a route twice replaces the handler and keeps Allow free of duplicates")
    func replacingRoute() {
        var router = makeRouter()
        router.add("POST", "/sync/push") { _ in HTTPResponse(status: 202) }
        let response = router.handle(HTTPRequest(head: HTTPRequestHead(method: "POST", path: "/sync/push")))
        #expect(response.status == 202)
        let miss = router.handle(HTTPRequest(head: HTTPRequestHead(method: "DELETE", path: "/sync/push")))
        #expect(miss.headers.values(for: "Allow") == ["POST, PUT"])
    }
}

extension Result {
    fileprivate var failureValue: Failure? {
        if case .failure(let failure) = self { failure } else { nil }
    }
}
