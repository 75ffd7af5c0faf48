import Foundation
import Synchronization
import SynchroHTTP
import SynchroProtocol
import SynchroServer
import Testing
import _SeedkitTestSupport

/// Faults scheduled through the operator control route and the Swift API.
@Suite("Fault injection")
struct FaultInjectionTests {
    static let connect = ConnectEndpointTests.freshBody()

    func operatorPost(_ server: RunningServer, _ json: String, token: String = RunningServer.operatorToken) throws
        -> RunningServer.Reply
    {
        try server.send("POST", "/operator/faults", body: Array(json.utf8), headers: [
            ("Authorization", "Bearer \(token)"), ("Content-Type", "application/json"),
        ])
    }

    @Test("rejected requests get 429 or 503 with Retry-After, then the route works again")
    func rejectRequests() throws {
        let server = try RunningServer()
        let scheduled = try operatorPost(
            server, #"{"fault":"reject_requests","route":"/sync/connect","count":2,"status":429}"#)
        #expect(scheduled.status == 200)
        for _ in 0..<2 {
            let reply = try server.post("/sync/connect", Self.connect)
            #expect(reply.status == 429)
            #expect(reply.errorCode == "retry_later")
            #expect(reply.object["error"]?.objectValue?["retryable"] == .bool(true))
            #expect(reply.header("Retry-After") == "5")
        }
        #expect(try server.post("/sync/connect", Self.connect).status == 200)

        try server.engine.inject(.rejectRequests(route: "/sync/connect", count: 1, status: 503))
        let unavailable = try server.post("/sync/connect", Self.connect)
        #expect(unavailable.status == 503)
        #expect(unavailable.errorCode == "temporary_unavailable")
        #expect(unavailable.header("Retry-After") == "5")
    }

    @Test("a lost response is committed on the server but never reaches the client")
    func loseResponse() throws {
        let server = try RunningServer()
        try server.engine.inject(.loseResponse(route: "/sync/connect", count: 1))
        #expect(throws: TransportError.self) { _ = try server.post("/sync/connect", Self.connect) }
        // The registration was committed (generation 1 went to the lost answer): the identity is known, so the
        // resent sentinel is refused as upstream refuses it, and the refusal changes nothing.
        let again = try server.post("/sync/connect", Self.connect)
        #expect(again.status == 400)
        #expect(again.errorCode == "invalid_schema_reference")
        let holder = try server.post("/sync/connect", try ConnectEndpointTests.continuingBody(
            generation: 1, schema: .object(JSONObject([
                JSONMember("version", .number(JSONNumber(1))),
                JSONMember("hash", server.engine.currentSchemaHashForTesting.map(JSONValue.string) ?? .null),
            ])), setVersion: 1))
        #expect(holder.status == 200)
        #expect(holder.object["client_generation"] == .number(JSONNumber(1)))
    }

    @Test("a lost response on a reused keep-alive connection fails the transfer once; libcurl resends nothing")
    func loseResponseOnReusedConnection() throws {
        let directory = try TemporaryDirectory(prefix: "fault-keep-alive")
        let dataset = try Dataset(directory: RepositoryLayout.root.appendingPathComponent("seeds/demo"))
        let engine = try SyncEngine(configuration: ServerConfiguration(
            dataset: dataset, rowsOverride: 20, databasePath: directory.path("server.db"),
            credentials: RunningServer.credentials, operatorToken: RunningServer.operatorToken,
            clock: ManualServerClock()))
        let handled = HandledRequests()
        let server = HTTPServer(handler: HTTPClosureHandler { request in
            let response = engine.handle(request)
            handled.add(request.path)
            return response
        })
        let port = try server.start(host: "127.0.0.1", port: 0)
        defer { server.stop() }
        let client = try CurlTransport(configuration: .init(baseURL: "http://127.0.0.1:\(port)"))
        var headers = HTTPHeaders()
        headers.append(name: "Authorization", value: "Bearer secret-alice")
        headers.append(name: "Content-Type", value: "application/json")
        let connect = TransportRequest(
            method: .post, path: "/sync/connect", headers: headers, body: Array(Self.connect.utf8))
        // The first exchange opens the connection the lost response then arrives on.
        #expect(try client.send(TransportRequest(method: .get, path: "/ready")).status == 200)

        try engine.inject(.loseResponse(route: "/sync/connect", count: 1))
        // The header fields arrived, the announced body did not: a partial transfer, not a stale connection.
        #expect(throws: TransportError.other(code: 18)) { _ = try client.send(connect) }
        #expect(handled.all == ["/ready": 1, "/sync/connect": 1])

        // The lost connect was committed; its resend reaches the server and is refused as a known identity's.
        let again = try client.send(connect)
        #expect(again.status == 400)
        #expect(String(decoding: again.body, as: UTF8.self).contains("\"invalid_schema_reference\""))
        #expect(handled.all == ["/ready": 1, "/sync/connect": 2])
    }

    @Test("a retired client gets 409 client_retired on connect")
    func retire() throws {
        let server = try RunningServer()
        #expect(try server.post("/sync/connect", Self.connect).status == 200)
        let scheduled = try operatorPost(server, #"{"fault":"retire_client","user":"alice","client_id":"ios-1"}"#)
        #expect(scheduled.status == 200)
        let reply = try server.post("/sync/connect", try ConnectEndpointTests.continuingBody(
            generation: 1, schema: .object(JSONObject([
                JSONMember("version", .number(JSONNumber(1))),
                JSONMember("hash", server.engine.currentSchemaHashForTesting.map(JSONValue.string) ?? .null),
            ])), setVersion: 1))
        #expect(reply.status == 409)
        #expect(reply.errorCode == "client_retired")
    }

    @Test("an expired generation is renewed by connect with null cursor updates and a new generation")
    func expireGeneration() throws {
        let server = try RunningServer()
        let first = try server.post("/sync/connect", Self.connect)
        try server.engine.inject(.expireClientGeneration(user: "alice", client: "ios-1"))
        let again = try server.post("/sync/connect", try ConnectEndpointTests.continuingBody(
            generation: 1, schema: ConnectEndpointTests.reference(first), setVersion: 1))
        #expect(again.status == 200)
        #expect(again.object["client_generation"] == .number(JSONNumber(3)))
        #expect(again.object["schema"]?.objectValue?["action"] == .string("none"))
    }

    @Test("the control route needs the operator credential and a known fault", arguments: [
        (#"{"fault":"pause_materialization"}"#, "wrong", 401),
        (#"{"fault":"teleport"}"#, RunningServer.operatorToken, 400),
        (#"{"fault":"lose_response","route":"/sync/push"}"#, RunningServer.operatorToken, 400),
        (#"{"fault":"reject_requests","route":"/sync/pull","count":1,"status":500}"#, RunningServer.operatorToken, 400),
        (#"{"fault":"change_membership","extra":1}"#, RunningServer.operatorToken, 400),
        ("not json", RunningServer.operatorToken, 400),
    ])
    func controlRoute(body: String, token: String, status: Int) throws {
        let server = try RunningServer()
        #expect(try operatorPost(server, body, token: token).status == status)
    }
}

/// Faults that change what pull reports.
@Suite("Fault injection on pull")
struct PullFaultTests {
    @Test("a corrupted terminal checksum differs from the rebuilt digest once, then is correct again")
    func corruptChecksum() throws {
        let server = try RunningServer(rows: 40)
        let client = try WireClient.connect(server)
        let run = try client.rebuild(scope: "user:alice", limit: 50)
        let expected = try #require(run.checksum)
        let cursor = try #require(run.finalCursor)
        try server.engine.inject(.corruptChecksum(scope: "user:alice"))
        let corrupted = try client.pull([("user:alice", cursor)])
        #expect(corrupted.status == 200)
        let wrong = try #require(DigestCheck.checksum(corrupted.object, scope: "user:alice"))
        #expect(wrong != expected)
        let healthy = try client.pull([("user:alice", cursor)])
        #expect(DigestCheck.checksum(healthy.object, scope: "user:alice") == expected)
    }

    @Test("reassigned scopes reach the client as an assignment delta on pull and on connect")
    func reassign() throws {
        let server = try RunningServer(rows: 40)
        var client = try WireClient.connect(server)
        #expect(client.scopes == ["catalog", "user:alice"])
        let scheduled = try server.send("POST", "/operator/faults", body: Array(
            #"{"fault":"reassign_scopes","user":"alice","grant":["region:eu"],"revoke":["catalog"]}"#.utf8),
            headers: [("Authorization", "Bearer \(RunningServer.operatorToken)"), ("Content-Type", "application/json")])
        #expect(scheduled.status == 200)
        let reply = try client.pull([("catalog", nil), ("user:alice", nil)])
        #expect(reply.status == 200)
        let updates = try #require(reply.object["scope_updates"]?.objectValue)
        #expect(updates["add"]?.arrayValue?.compactMap { $0.objectValue?["id"]?.stringValue } == ["region:eu"])
        #expect(updates["remove"] == .array([.string("catalog")]))
        #expect(reply.object["rebuild"]?.arrayValue?.contains(.string("region:eu")) == true)
        #expect(reply.object["scope_set_version"] == .number(JSONNumber(client.scopeSetVersion + 1)))
        let checksums = try #require(reply.object["checksums"]?.objectValue)
        #expect(checksums.keys.sorted() == ["region:eu", "user:alice"])
        client.scopeSetVersion += 1
        let empty = try client.rebuild(scope: "region:eu", limit: 10)
        #expect(empty.records.isEmpty)
    }
}

/// Requests a server handled, per path.
final class HandledRequests: Sendable {
    private let counts = Mutex<[String: Int]>([:])

    var all: [String: Int] { counts.withLock { $0 } }

    func add(_ path: String) {
        counts.withLock { $0[path, default: 0] += 1 }
    }
}
