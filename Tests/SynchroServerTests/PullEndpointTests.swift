@testable import SynchroServer
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// Black-box tests of `POST /sync/pull` (`spec/wire-protocol.md` §5) over loopback.
@Suite("Pull endpoint")
struct PullEndpointTests {
    /// A connected client with every assigned scope rebuilt: its final cursors and checksums.
    struct Synced {
        let client: WireClient
        var cursors: [String: String]
        var checksums: [String: String]
    }

    static func synced(_ server: RunningServer, user: String = "alice", limit: Int64 = 1000) throws -> Synced {
        let client = try WireClient.connect(server, user: user)
        var cursors: [String: String] = [:]
        var checksums: [String: String] = [:]
        for scope in client.scopes {
            let run = try client.rebuild(scope: scope, limit: limit)
            let cursor: String = try #require(run.finalCursor)
            let checksum: String = try #require(run.checksum)
            cursors[scope] = cursor
            checksums[scope] = checksum
        }
        return Synced(client: client, cursors: cursors, checksums: checksums)
    }

    @Test("pulling with the final rebuild cursors gives an empty terminal page with the rebuild checksums")
    func steadyPull() throws {
        let server = try RunningServer(rows: 200)
        let synced = try Self.synced(server, limit: 70)
        let reply = try synced.client.pull(synced.cursors.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
        #expect(reply.status == 200)
        let page = reply.object
        #expect(page["changes"] == .array([]))
        #expect(page["has_more"] == .bool(false))
        #expect(page["rebuild"] == .array([]))
        #expect(page["scope_set_version"] == .number(JSONNumber(synced.client.scopeSetVersion)))
        #expect(page["scope_updates"] == object(["add": .array([]), "remove": .array([])]))
        #expect(page["scope_cursors"]?.objectValue?.keys.sorted() == ["catalog", "user:alice"])
        #expect(page["checksums"]?.objectValue?.keys.sorted() == ["catalog", "user:alice"])
        for scope in synced.client.scopes {
            #expect(DigestCheck.checksum(page, scope: scope) == synced.checksums[scope])
        }
        // The issued cursors resume the same way, again and again.
        let cursors = try #require(page["scope_cursors"]?.objectValue).members.map { ($0.key, $0.value.stringValue) }
        let again = try synced.client.pull(cursors)
        #expect(again.status == 200)
        #expect(again.object["checksums"] == page["checksums"])
    }

    @Test("scopes without a cursor are listed for rebuild, get no changes or cursor, and still get a checksum")
    func nullCursors() throws {
        let server = try RunningServer(rows: 30)
        let client = try WireClient.connect(server)
        try server.engine.operatorWrite(
            table: "tbl_categories", pk: .number(JSONNumber(2)),
            row: object(["fld_category_id": .number(JSONNumber(2)), "fld_category_name": .string("Garden")]))
        let reply = try client.pull([("catalog", nil), ("user:alice", nil)], limit: 5)
        #expect(reply.status == 200)
        let page = reply.object
        #expect(page["rebuild"] == .array([.string("catalog"), .string("user:alice")]))
        #expect(page["changes"] == .array([]))
        #expect(page["scope_cursors"] == object([:]))
        #expect(page["has_more"] == .bool(false))
        let catalog = try client.rebuild(scope: "catalog", limit: 1000)
        #expect(DigestCheck.checksum(page, scope: "catalog") == catalog.checksum)
        #expect(page["checksums"]?.objectValue?.count == 2)
    }

    @Test("a client that presents no scopes is told about its assignment and every scope is to be rebuilt")
    func missedAssignment() throws {
        let server = try RunningServer(rows: 10)
        let client = try WireClient.connect(server)
        let reply = try client.pull([], scopeSetVersion: 0)
        #expect(reply.status == 200)
        let page = reply.object
        #expect(page["scope_set_version"] == .number(JSONNumber(client.scopeSetVersion)))
        #expect(page["scope_updates"]?.objectValue?["add"] == .array([
            object(["id": .string("catalog"), "cursor": .null]), object(["id": .string("user:alice"), "cursor": .null]),
        ]))
        #expect(page["rebuild"] == .array([.string("catalog"), .string("user:alice")]))
        // An up-to-date client presenting nothing gets no delta.
        let current = try client.pull([])
        #expect(current.object["scope_updates"] == object(["add": .array([]), "remove": .array([])]))
    }

    @Test("forged, truncated, wrong-kind and misbound cursors fail the whole request with 400")
    func badCursors() throws {
        let server = try RunningServer(rows: 20)
        let synced = try Self.synced(server, limit: 1000)
        let bob = try Self.synced(server, user: "bob")
        let catalog = try #require(synced.cursors["catalog"])
        let parts = catalog.split(separator: ".").map(String.init)
        let forged = parts[0] + "." + parts[1] + "." + (parts[2].first == "A" ? "B" : "A") + parts[2].dropFirst()
        let rebuildID = WireClient.newRebuildID()
        let continuation = try #require(try synced.client.rebuildPage(
            scope: "catalog", rebuildID: rebuildID, cursor: nil, limit: 1).object["cursor"]?.stringValue)
        let cases: [[(String, String?)]] = [
            [("catalog", forged), ("user:alice", synced.cursors["user:alice"])],
            [("catalog", String(catalog.dropLast(3)))],
            [("catalog", "c3.e30")],
            [("catalog", continuation)],
            [("catalog", synced.cursors["user:alice"])],  // issued for another scope
            [("catalog", bob.cursors["catalog"])],  // issued to another user's client
            [("user:alice", synced.cursors["user:alice"]), ("catalog", "")],
        ]
        for scopes in cases {
            let reply = try synced.client.pull(scopes)
            #expect(reply.status == 400)
            #expect(reply.errorCode == "invalid_request")
            #expect(reply.object["error"]?.objectValue?["message"] == .string("invalid request: invalid cursor"))
        }
    }

    @Test("assignment and request gates: unknown scope, version ahead, generation, schema and foreign client")
    func gates() throws {
        let server = try RunningServer(rows: 10)
        let client = try WireClient.connect(server)
        let unknown = try client.pull([("user:bob", nil)])
        #expect(unknown.status == 400)
        #expect(unknown.errorCode == "invalid_request")
        let ahead = try client.pull([], scopeSetVersion: client.scopeSetVersion + 1)
        #expect(ahead.status == 400)

        var stale = client
        stale.generation = client.generation + 1
        let expired = try stale.pull([])
        #expect(expired.status == 409)
        #expect(expired.errorCode == "client_generation_expired")
        #expect(expired.errorMember("current_client_generation") == .number(JSONNumber(client.generation)))

        var body = try #require(client.pullBody(scopes: [], limit: 10).objectValue).members
        body = body.map {
            $0.key == "schema" ? JSONMember("schema", object(["version": .number(JSONNumber(1)),
                "hash": .string(String(repeating: "cd", count: 32))])) : $0
        }
        let mismatch = try server.post("/sync/pull", .object(JSONObject(body)))
        #expect(mismatch.status == 422)
        #expect(mismatch.errorMember("received_schema") != nil)
        #expect(try server.post("/sync/pull", client.pullBody(scopes: [], limit: 10), as: "bob").status == 401)
        #expect(try client.pull([], limit: 0).status == 400)
        #expect(try client.pull([], limit: 1001).status == 400)
    }

    @Test("a cursor of an earlier client generation is authentic but stale: the scope is rebuilt, others proceed")
    func staleGenerationCursor() throws {
        let server = try RunningServer(rows: 10)
        let synced = try Self.synced(server)
        // Presenting a generation the server did not issue renews it (`spec/wire-protocol.md` §3.5).
        let schema = try CanonicalJSON.string(synced.client.schema)
        let reconnect = try server.post("/sync/connect", """
            {"client_id":"\(synced.client.clientID)","client_generation":\(synced.client.generation + 7),\
            "platform":"ios","app_version":"1.0.0","protocol_version":3,"schema":\(schema),\
            "scope_set_version":\(synced.client.scopeSetVersion),"known_scopes":{"catalog":{"cursor":null}}}
            """)
        #expect(reconnect.status == 200)
        var client = synced.client
        client.generation = try #require(reconnect.object["client_generation"]?.numberValue?.exactInt64)
        #expect(client.generation == synced.client.generation + 1)
        let fresh = try client.rebuild(scope: "catalog", limit: 1000)
        let reply = try client.pull([("catalog", fresh.finalCursor), ("user:alice", synced.cursors["user:alice"])])
        #expect(reply.status == 200)
        #expect(reply.object["rebuild"] == .array([.string("user:alice")]))
        #expect(reply.object["scope_cursors"]?.objectValue?.keys == ["catalog"])
    }

    @Test("small limits page through every change exactly once and the terminal checksums match a fresh rebuild")
    func paging() throws {
        let server = try RunningServer(rows: 40)
        let synced = try Self.synced(server)
        let catalog = try synced.client.rebuild(scope: "catalog", limit: 1000).records
        let products = catalog.filter { $0["table"]?.stringValue == "tbl_products" }
        // 23 products change; one of them three times (only its latest state is delivered).
        for (i, record) in products.prefix(23).enumerated() {
            let key = try #require(record["pk"]?.objectValue?["fld_product_id"])
            try server.engine.operatorWrite(table: "tbl_products", pk: key, row: Self.retitled(record, "title \(i)"))
        }
        let hot = products[5]
        let hotKey = try #require(hot["pk"]?.objectValue?["fld_product_id"])
        try server.engine.operatorWrite(table: "tbl_products", pk: hotKey, row: Self.retitled(hot, "second"))
        let latestVersion = try server.engine.operatorWrite(
            table: "tbl_products", pk: hotKey, row: Self.retitled(hot, "third"))

        for limit: Int64 in [1, 4, 7, 1000] {
            let (changes, last) = try synced.client.pullToTerminal(from: synced.cursors, limit: limit)
            let keys = changes.compactMap { $0["pk"] }
            #expect(Set(keys).count == 23, "limit \(limit)")
            #expect(changes.allSatisfy { $0["scope"] == .string("catalog") && $0["op"] == .string("upsert") })
            for change in changes { _ = try DigestCheck.verifyRow(change, manifest: synced.client.manifest) }
            let hotChanges = changes.filter { $0["pk"]?.objectValue?["fld_product_id"] == hotKey }
            #expect(hotChanges.last?["server_version"] == .string(latestVersion))
            #expect(hotChanges.last?["row"]?.objectValue?["fld_product_title"] == .string("third"))
            let rebuilt = try synced.client.rebuild(scope: "catalog", limit: 1000)
            let recomputed = try DigestCheck.scopeDigest(
                rebuilt.records, scope: "catalog", manifest: synced.client.manifest)
            #expect(DigestCheck.checksum(last, scope: "catalog") == recomputed)
            #expect(DigestCheck.checksum(last, scope: "user:alice") == synced.checksums["user:alice"])
            if limit == 1000 { #expect(changes.count == 23) }
        }
    }

    @Test("a row moving between users' scopes is a rowless delete in one and an upsert in the other")
    func rowLeavesScope() throws {
        let server = try RunningServer(rows: 10)
        let alice = try Self.synced(server)
        let bob = try Self.synced(server, user: "bob")
        let note = try #require(try alice.client.rebuild(scope: "user:alice", limit: 1000).records
            .first { $0["table"]?.stringValue == "tbl_notes" })
        let key = try #require(note["pk"]?.objectValue?["fld_note_id"])
        let moved = try #require(note["row"]?.objectValue).members.map {
            $0.key == "fld_note_owner" ? JSONMember($0.key, .string("bob")) : $0
        }
        let version = try server.engine.operatorWrite(table: "tbl_notes", pk: key, row: .object(JSONObject(moved)))

        let (aliceChanges, aliceLast) = try alice.client.pullToTerminal(from: alice.cursors, limit: 100)
        #expect(aliceChanges.count == 1)
        let delete = try #require(aliceChanges.first)
        #expect(delete.keys.sorted() == ["op", "pk", "scope", "server_version", "table"])
        #expect(delete["op"] == .string("delete"))
        #expect(delete["scope"] == .string("user:alice"))
        #expect(delete["server_version"] == .string(version))
        let aliceRebuilt = try alice.client.rebuild(scope: "user:alice", limit: 1000)
        #expect(aliceRebuilt.records.count == 59)
        #expect(DigestCheck.checksum(aliceLast, scope: "user:alice") == aliceRebuilt.checksum)

        let (bobChanges, bobLast) = try bob.client.pullToTerminal(from: bob.cursors, limit: 100)
        #expect(bobChanges.count == 1)
        #expect(bobChanges.first?["op"] == .string("upsert"))
        #expect(bobChanges.first?["scope"] == .string("user:bob"))
        _ = try DigestCheck.verifyRow(try #require(bobChanges.first), manifest: bob.client.manifest)
        let bobRebuilt = try bob.client.rebuild(scope: "user:bob", limit: 1000)
        #expect(DigestCheck.checksum(bobLast, scope: "user:bob") == bobRebuilt.checksum)
    }

    @Test("a soft delete arrives as a delete with its tombstone row; a table without tombstones gets a rowless delete")
    func deletes() throws {
        let server = try RunningServer(rows: 10)
        let synced = try Self.synced(server)
        let records = try synced.client.rebuild(scope: "user:alice", limit: 1000).records
        let note = try #require(records.first { $0["table"]?.stringValue == "tbl_notes" })
        let task = try #require(records.first { $0["table"]?.stringValue == "tbl_tasks" })
        server.clock.advance(hours: 1)
        try server.engine.operatorDelete(table: "tbl_notes", pk: try #require(note["pk"]?.objectValue?["fld_note_id"]))
        let taskKey = try #require(task["pk"]?.objectValue?["fld_task_id"])
        try server.engine.operatorDelete(table: "tbl_tasks", pk: taskKey)

        let (changes, last) = try synced.client.pullToTerminal(from: synced.cursors, limit: 1)
        #expect(changes.count == 2)
        let tombstone = try #require(changes.first { $0["table"] == .string("tbl_notes") })
        #expect(tombstone["op"] == .string("delete"))
        _ = try DigestCheck.verifyRow(tombstone, manifest: synced.client.manifest)
        #expect(tombstone["row"]?.objectValue?["fld_note_deleted_at"]?.stringValue != nil)
        let fence = try #require(changes.first { $0["table"] == .string("tbl_tasks") })
        #expect(fence["op"] == .string("delete"))
        #expect(fence["row"] == nil && fence["row_checksum"] == nil)
        // Neither deleted row counts in the scope any more, in pull and rebuild alike.
        let rebuilt = try synced.client.rebuild(scope: "user:alice", limit: 1000)
        #expect(rebuilt.records.count == 58)
        #expect(DigestCheck.checksum(last, scope: "user:alice") == rebuilt.checksum)
        #expect(throws: OperatorWriteError.rowNotFound) {
            try server.engine.operatorDelete(table: "tbl_tasks", pk: taskKey)
        }
    }

    @Test("the client's own accepted write answers capture_pending until materialized, then arrives")
    func capturePending() throws {
        let server = try RunningServer(rows: 10, materialization: .manual)
        let synced = try Self.synced(server)
        let other = try WireClient.connect(server)
        let note = try #require(try synced.client.rebuild(scope: "user:alice", limit: 1000).records
            .first { $0["table"]?.stringValue == "tbl_notes" })
        let edited = try #require(note["row"]?.objectValue).members.map {
            $0.key == "fld_note_title" ? JSONMember($0.key, .string("from the device")) : $0
        }
        try server.engine.acceptClientWrite(
            user: "alice", client: synced.client.clientID, table: "tbl_notes",
            pk: try #require(note["pk"]?.objectValue?["fld_note_id"]), row: .object(JSONObject(edited)))

        let scopes = synced.cursors.sorted { $0.key < $1.key }.map { ($0.key, Optional($0.value)) }
        let pending = try synced.client.pull(scopes)
        #expect(pending.status == 503)
        #expect(pending.errorCode == "capture_pending")
        #expect(pending.object["error"]?.objectValue?["retryable"] == .bool(true))
        #expect(pending.header("Retry-After") == "5")
        #expect(pending.object.keys == ["error"])
        // Another client of the same user has no pending write: it reads the old boundary.
        #expect(try other.pull([("user:alice", nil)]).status == 200)

        server.engine.materialize()
        let reply = try synced.client.pull(scopes)
        #expect(reply.status == 200)
        let changes = try #require(reply.object["changes"]?.arrayValue)
        #expect(changes.count == 1)
        #expect(changes.first?.objectValue?["row"]?.objectValue?["fld_note_title"] == .string("from the device"))
    }

    @Test("a pushed write holds its client's pull until materialized, then arrives with the push's version and digest")
    func pushThenPull() throws {
        let server = try RunningServer(rows: 10, materialization: .manual)
        let synced = try Self.synced(server)
        let client = synced.client
        let pusher = PushTestClient(
            server: server, user: "alice", clientID: client.clientID, generation: client.generation,
            schema: try CanonicalJSON.string(client.schema), manifest: client.manifest,
            scopeSetVersion: client.scopeSetVersion)
        let pushed = try pusher.push(batch: 1, [pusher.insertNote(1, note: "n-pushed")])
        #expect(pushed.status == 200)
        let outcome = try #require(pushed.accepted.first)

        let scopes = synced.cursors.sorted { $0.key < $1.key }.map { ($0.key, Optional($0.value)) }
        #expect(try client.pull(scopes).errorCode == "capture_pending")
        server.engine.materialize()
        let page = try client.pull(scopes).object
        let changes = try #require(page["changes"]?.arrayValue).compactMap(\.objectValue)
        #expect(changes.count == 1)
        let change = try #require(changes.first)
        #expect(change["scope"] == .string("user:alice"))
        #expect(change["server_version"] == outcome["server_version"])
        let pulledChecksum = try Checksum(json: try #require(change["row_checksum"]))
        #expect(pulledChecksum == (try Checksum(json: try #require(outcome["row_checksum"]))))
        let rebuilt = try client.rebuild(scope: "user:alice", limit: 1000)
        #expect(rebuilt.records.count == 61)
        #expect(DigestCheck.checksum(page, scope: "user:alice") == rebuilt.checksum)
    }

    @Test("a membership-contract change makes every cursor stale: HTTP 200 with all scopes to rebuild")
    func membershipChange() throws {
        let server = try RunningServer(rows: 10)
        let synced = try Self.synced(server)
        try server.engine.inject(.changeMembership)
        let reply = try synced.client.pull(synced.cursors.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
        #expect(reply.status == 200)
        #expect(reply.object["rebuild"] == .array([.string("catalog"), .string("user:alice")]))
        #expect(reply.object["scope_cursors"] == object([:]))
        #expect(reply.object["checksums"]?.objectValue?.count == 2)
        // The cursors of a new rebuild are current again.
        let fresh = try synced.client.rebuild(scope: "catalog", limit: 1000)
        let again = try synced.client.pull([("catalog", fresh.finalCursor)])
        #expect(again.object["rebuild"] == .array([]))
        #expect(DigestCheck.checksum(again.object, scope: "catalog") == fresh.checksum)
    }

    @Test("the assignment delta is phrased against what the client presented", arguments: [
        // recorded, current, presented, behind → added, removed, changed
        (["a", "b"], ["a", "b"], ["a", "b"], false, [String](), [String](), false),
        (["a"], ["a", "b"], ["a"], false, ["b"], [], true),
        (["a", "b"], ["a"], ["a", "b"], false, [], ["b"], true),
        (["a"], ["a"], ["a", "old"], true, [], ["old"], false),
        (["a", "b"], ["a", "b"], ["a"], true, ["b"], [], false),
        (["a", "b"], ["a", "b"], ["a"], false, [], [], false),
        (["b"], ["c", "a"], [], true, ["a", "c"], ["b"], true),
    ] as [([String], [String], [String], Bool, [String], [String], Bool)])
    func assignmentDelta(
        recorded: [String], current: [String], presented: [String], behind: Bool, added: [String],
        removed: [String], changed: Bool
    ) {
        let delta = AssignmentDelta(recorded: recorded, current: current, presented: presented, clientBehind: behind)
        #expect(delta.added == added)
        #expect(delta.removed == removed)
        #expect(delta.changed == changed)
    }

    static func retitled(_ record: JSONObject, _ title: String) throws -> JSONValue {
        let members = try #require(record["row"]?.objectValue).members.map {
            $0.key == "fld_product_title" ? JSONMember($0.key, .string(title)) : $0
        }
        return .object(JSONObject(members))
    }
}
