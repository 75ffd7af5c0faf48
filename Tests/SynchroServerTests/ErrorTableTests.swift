import Foundation
@testable import SynchroServer
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// Every row of the complete status and code table (`spec/wire-protocol.md` §8.2) provoked
/// black-box over loopback, each answer checked against the error envelope (§8.1), `Retry-After`
/// (§1.3, §8.3) and the rule that a rejected request changes no durable state.
@Suite("Error table")
struct ErrorTableTests {
    /// One way to reach one row of §8.2: the server it needs, the setup that makes the condition
    /// true, and the exact extra members the error must carry.
    struct Row: Sendable, CustomTestStringConvertible {
        let status: Int
        let code: String
        let retryable: Bool
        /// What makes the condition hold, in words (the test's name in reports).
        let situation: String
        /// Starts the server with a minimum client runtime (only the runtime 426 needs one).
        var minimumClientVersion: String?
        /// Prepares the condition and returns the request that meets it, with the expected extras.
        let provoke: @Sendable (RunningServer) throws -> Provocation

        var testDescription: String { "\(status) \(code): \(situation)" }
    }

    /// The offending request and the code-specific members its error must carry, exactly.
    struct Provocation {
        var path: String
        var body: [UInt8]
        var headers: [(String, String)]
        var extras: [String: JSONValue] = [:]

        /// A protocol POST as `user` with the normal headers.
        static func post(
            _ path: String, _ body: JSONValue, as user: String = "alice", extras: [String: JSONValue] = [:]
        ) throws -> Provocation {
            Provocation(path: path, body: try CanonicalJSON.encode(body), headers: headers(user), extras: extras)
        }

        static func post(
            _ path: String, text: String, as user: String = "alice", extras: [String: JSONValue] = [:]
        ) -> Provocation {
            Provocation(path: path, body: Array(text.utf8), headers: headers(user), extras: extras)
        }

        static func headers(_ user: String) -> [(String, String)] {
            [("Authorization", "Bearer secret-\(user)"), ("Content-Type", "application/json")]
        }
    }

    static let rows: [Row] = [
        Row(status: 400, code: "invalid_request", retryable: false, situation: "a pull limit of 0") { server in
            let client = try WireClient.connect(server)
            return try .post("/sync/pull", client.pullBody(scopes: [("user:alice", nil)], limit: 0))
        },
        Row(status: 400, code: "invalid_schema_reference", retryable: false, situation: "a malformed connect schema") {
            _ in
            let schema = object(["version": .number(JSONNumber(1)), "hash": .string("not-a-hash")])
            let body = ConnectEndpointTests.freshBody().replacingOccurrences(
                of: #""schema":{"version":0,"hash":""}"#, with: #""schema":{"version":1,"hash":"not-a-hash"}"#)
            return .post("/sync/connect", text: body, extras: ["received_schema": schema])
        },
        Row(status: 401, code: "auth_required", retryable: false, situation: "no Authorization header") { _ in
            Provocation(
                path: "/sync/connect", body: Array(ConnectEndpointTests.freshBody().utf8),
                headers: [("Content-Type", "application/json")])
        },
        Row(status: 401, code: "auth_required", retryable: false, situation: "a client_id bound to another user") {
            server in
            let bob = try WireClient.connect(server, user: "bob")
            return try .post("/sync/pull", bob.pullBody(scopes: [], limit: 10), as: "alice")
        },
        Row(status: 409, code: "idempotency_conflict", retryable: false, situation: "a reused batch_id") { server in
            let client = try PushTestClient.connect(server)
            let first = try client.push(batch: 1, [client.insertNote(1, note: "n-1")])
            try #require(first.status == 200)
            return .post("/sync/push", text: client.body(batch: 1, [client.insertNote(2, note: "n-2")]))
        },
        Row(status: 409, code: "client_retired", retryable: false, situation: "a pull from a retired client") {
            server in
            let client = try WireClient.connect(server)
            try server.engine.inject(.retireClient(user: "alice", client: client.clientID))
            return try .post("/sync/pull", client.pullBody(scopes: [], limit: 10))
        },
        Row(status: 409, code: "client_generation_expired", retryable: false, situation: "a pull after expiry") {
            server in
            let client = try WireClient.connect(server)
            try server.engine.inject(.expireClientGeneration(user: "alice", client: client.clientID))
            return try .post(
                "/sync/pull", client.pullBody(scopes: [], limit: 10),
                extras: ["current_client_generation": .number(JSONNumber(client.generation + 1))])
        },
        Row(status: 409, code: "rebuild_restart_required", retryable: false, situation: "an expired continuation") {
            server in
            let client = try WireClient.connect(server)
            let rebuildID = WireClient.newRebuildID()
            let first = try client.rebuildPage(scope: "catalog", rebuildID: rebuildID, cursor: nil, limit: 10)
            let cursor = try #require(first.object["cursor"]?.stringValue)
            try server.engine.inject(.expireRebuildSessions)
            return try .post(
                "/sync/rebuild", client.rebuildBody(scope: "catalog", rebuildID: rebuildID, cursor: cursor, limit: 10),
                extras: ["scope_id": .string("catalog")])
        },
        Row(status: 422, code: "schema_mismatch", retryable: false, situation: "a pull under another schema") {
            server in
            let client = try WireClient.connect(server)
            let stale = object([
                "version": .number(JSONNumber(1)), "hash": .string(String(repeating: "ab", count: 32)),
            ])
            var body = try #require(client.pullBody(scopes: [], limit: 10).objectValue)
            body = JSONObject(body.members.map { $0.key == "schema" ? JSONMember("schema", stale) : $0 })
            return try .post(
                "/sync/pull", .object(body), extras: ["current_schema": client.schema, "received_schema": stale])
        },
        Row(status: 426, code: "upgrade_required", retryable: false, situation: "protocol version 2") { _ in
            let body = ConnectEndpointTests.freshBody().replacingOccurrences(
                of: #""protocol_version":3"#, with: #""protocol_version":2"#)
            return .post("/sync/connect", text: body, extras: [
                "required_protocol_version": .number(JSONNumber(3)),
                "received_protocol_version": .number(JSONNumber(2)),
            ])
        },
        Row(
            status: 426, code: "upgrade_required", retryable: false, situation: "an app version below the minimum",
            minimumClientVersion: "3.0.0"
        ) { _ in
            .post("/sync/connect", text: ConnectEndpointTests.freshBody(), extras: [
                "minimum_client_version": .string("3.0.0"), "received_client_version": .string("2.4.0"),
            ])
        },
        Row(status: 429, code: "retry_later", retryable: true, situation: "admission control") { server in
            let client = try WireClient.connect(server)
            try server.engine.inject(.rejectRequests(route: "/sync/pull", count: 1, status: 429))
            return try .post("/sync/pull", client.pullBody(scopes: [], limit: 10))
        },
        Row(status: 500, code: "sync_integrity_failure", retryable: false, situation: "a corrupt stored digest") {
            server in
            let client = try WireClient.connect(server)
            // The projection is what rebuild stages from; a digest that is not 32 octets is
            // impossible durable state, which no protocol request can produce.
            let changed = try server.engine.executeForTesting("""
                UPDATE projection SET row_digest = X'00' WHERE identity =
                    (SELECT identity FROM membership WHERE scope_id = 'catalog' ORDER BY identity LIMIT 1)
                """)
            try #require(changed == 1)
            return try .post(
                "/sync/rebuild",
                client.rebuildBody(scope: "catalog", rebuildID: WireClient.newRebuildID(), cursor: nil, limit: 10))
        },
        Row(status: 503, code: "capture_pending", retryable: true, situation: "a pull before the write is visible") {
            server in
            let pending = try Self.clientWithPendingWrite(server)
            return try .post("/sync/pull", pending.pullBody(scopes: [("user:alice", nil)], limit: 10))
        },
        Row(status: 503, code: "capture_pending", retryable: true, situation: "a rebuild before visibility") {
            server in
            let pending = try Self.clientWithPendingWrite(server)
            return try .post(
                "/sync/rebuild",
                pending.rebuildBody(scope: "user:alice", rebuildID: WireClient.newRebuildID(), cursor: nil, limit: 10))
        },
        Row(status: 503, code: "temporary_unavailable", retryable: true, situation: "an operational failure") {
            server in
            let client = try WireClient.connect(server)
            try server.engine.inject(.rejectRequests(route: "/sync/pull", count: 1, status: 503))
            return try .post("/sync/pull", client.pullBody(scopes: [], limit: 10))
        },
        Row(status: 503, code: "temporary_unavailable", retryable: true, situation: "blocked capture") { server in
            let pending = try Self.clientWithPendingWrite(server)
            // The captured row can no longer be read, so the materializer stops at it.
            try #require(try server.engine.executeForTesting(
                "UPDATE capture_log SET row = X'7B' WHERE lsn = (SELECT max(lsn) FROM capture_log)") == 1)
            try server.engine.inject(.resumeMaterialization)
            return try .post(
                "/sync/pull", pending.pullBody(scopes: [("user:alice", nil)], limit: 10),
                extras: ["reason": .string("capture_blocked")])
        },
    ]

    @Test("each row of the status and code table is answered with its exact error envelope", arguments: rows)
    func errorRow(_ row: Row) throws {
        let server = try RunningServer(
            rows: 40, minimumClientVersion: row.minimumClientVersion.flatMap { SemanticVersion($0) })
        let provocation = try row.provoke(server)
        let before = try server.engine.stateFingerprint()
        let reply = try server.send("POST", provocation.path, body: provocation.body, headers: provocation.headers)

        #expect(reply.status == row.status)
        #expect(reply.header("Content-Type") == "application/json")
        let retryAfter = reply.header("Retry-After")
        #expect(retryAfter == (row.status == 429 || row.status == 503 ? "5" : nil))
        // No success member: the body is exactly the error envelope.
        #expect(reply.object.keys == ["error"])
        let error = try #require(reply.error, "not an error envelope: \(reply.text)")
        #expect(error["code"] == .string(row.code))
        #expect(error["retryable"] == .bool(row.retryable))
        let message = error["message"]?.stringValue ?? ""
        #expect(!message.isEmpty)
        #expect(Set(error.keys) == Set(["code", "message", "retryable"]).union(provocation.extras.keys))
        #expect(error.keys.count == Set(error.keys).count, "a member is duplicated")
        for (name, value) in provocation.extras {
            // Member order carries no meaning (§1.5): compare canonical forms.
            #expect(try error[name].map(CanonicalJSON.encode) == CanonicalJSON.encode(value), "extra member \(name)")
        }
        #expect(try server.engine.stateFingerprint() == before, "a rejected request changed durable state")
    }

    @Test("the table above covers every protocol 3 error code with the status and retryable of §8.2")
    func tableIsComplete() {
        let covered = Set(Self.rows.map(\.code))
        #expect(covered == Set(WireErrorCode.allCases.map(\.rawValue)))
        for row in Self.rows {
            let code = WireErrorCode(rawValue: row.code)
            #expect(code?.httpStatus == row.status, "\(row.code)")
            #expect(code?.retryable == row.retryable, "\(row.code)")
        }
    }

    /// A client whose accepted push is not yet materialized: the server's materialization is paused.
    static func clientWithPendingWrite(_ server: RunningServer) throws -> WireClient {
        let client = try WireClient.connect(server)
        try server.engine.inject(.pauseMaterialization)
        let pusher = PushTestClient(
            server: server, user: client.user, clientID: client.clientID, generation: client.generation,
            schema: try CanonicalJSON.string(client.schema), manifest: client.manifest,
            scopeSetVersion: client.scopeSetVersion)
        let reply = try pusher.push(batch: 1, [pusher.insertNote(1, note: "pending-1")])
        try #require(reply.accepted.count == 1, "the push was not accepted: \(reply.text)")
        return client
    }
}
