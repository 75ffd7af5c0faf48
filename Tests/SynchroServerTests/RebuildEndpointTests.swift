@testable import SynchroServer
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// Black-box tests of `POST /sync/rebuild` (`spec/wire-protocol.md` §6) over loopback.
@Suite("Rebuild endpoint")
struct RebuildEndpointTests {
    @Test("a multi-page rebuild of catalog carries every row once with verifiable digests and scope digest")
    func catalogRebuild() throws {
        let server = try RunningServer(rows: 300)
        let client = try WireClient.connect(server)
        #expect(client.scopes == ["catalog", "user:alice"])
        let run = try client.rebuild(scope: "catalog", limit: 97)
        #expect(run.pages.count == 4)  // 40 categories + 300 products
        #expect(run.records.count == 340)
        for record in run.records { #expect(record.count == 5) }
        let digest = try DigestCheck.scopeDigest(run.records, scope: "catalog", manifest: client.manifest)
        #expect(run.checksum == digest)
        // Pages are in ascending identity order: the records are the scope digest's input order.
        let identities = try run.records.map { try DigestCheck.verifyRow($0, manifest: client.manifest).0 }
        #expect(identities == identities.sorted())
    }

    @Test("a multi-page rebuild of the user's own scope matches the digest recomputed from its records")
    func userScopeRebuild() throws {
        let server = try RunningServer(rows: 50)
        let client = try WireClient.connect(server)
        let run = try client.rebuild(scope: "user:alice", limit: 25)
        #expect(run.records.count == 60)  // 36 notes + 24 tasks
        #expect(run.pages.count == 3)
        let digest = try DigestCheck.scopeDigest(run.records, scope: "user:alice", manifest: client.manifest)
        #expect(run.checksum == digest)
        let tables = Set(run.records.compactMap { $0["table"]?.stringValue })
        #expect(tables == ["tbl_notes", "tbl_tasks"])
    }

    @Test("an empty assigned scope rebuilds as one final page with the empty-scope digest")
    func emptyScope() throws {
        let server = try RunningServer(rows: 10)
        let client = try WireClient.connect(server, user: "carol")
        let run = try client.rebuild(scope: "user:carol", limit: 10)
        #expect(run.pages.count == 1)
        #expect(run.records.isEmpty)
        #expect(run.checksum == (try DigestCheck.scopeDigest([], scope: "user:carol", manifest: client.manifest)))
    }

    @Test("the first, a middle and the final page replay byte-identically")
    func pageReplay() throws {
        let server = try RunningServer(rows: 100)
        let client = try WireClient.connect(server)
        let run = try client.rebuild(scope: "catalog", limit: 30)
        #expect(run.pages.count == 5)
        let continuations = run.continuations
        // Writes after the snapshot change nothing in it.
        try server.engine.operatorWrite(
            table: "tbl_categories", pk: .number(JSONNumber(1)),
            row: object(["fld_category_id": .number(JSONNumber(1)), "fld_category_name": .string("changed")]))
        for index in [0, 2, 4] {
            let cursor = index == 0 ? nil : continuations[index - 1]
            let replay = try client.rebuildPage(scope: "catalog", rebuildID: run.rebuildID, cursor: cursor, limit: 30)
            #expect(replay.status == 200)
            #expect(replay.body == run.pages[index].body, "page \(index) differs on replay")
        }
    }

    @Test("a forged, truncated or wrong-kind continuation is 400 without detail")
    func badContinuations() throws {
        let server = try RunningServer(rows: 100)
        let client = try WireClient.connect(server)
        let rebuildID = WireClient.newRebuildID()
        let first = try client.rebuildPage(scope: "catalog", rebuildID: rebuildID, cursor: nil, limit: 50)
        let token = try #require(first.object["cursor"]?.stringValue)
        let parts = token.split(separator: ".").map(String.init)
        try #require(parts.count == 3)
        let forgedMAC = parts[2].first == "A" ? "B" + parts[2].dropFirst() : "A" + parts[2].dropFirst()
        let pullCursor = try #require(try client.rebuild(scope: "user:alice", limit: 100).finalCursor)
        for bad in [
            "\(parts[0]).\(parts[1]).\(forgedMAC)", String(token.dropLast(5)), "\(parts[0]).\(parts[1])",
            "r3.e30.\(parts[2])", pullCursor, "tbl_products", "",
        ] {
            let reply = try client.rebuildPage(scope: "catalog", rebuildID: rebuildID, cursor: bad, limit: 50)
            #expect(reply.status == 400)
            #expect(reply.errorCode == "invalid_request")
            #expect(!reply.text.contains(bad) || bad.isEmpty)
        }
        // A continuation belongs to its own attempt and scope.
        let other = try client.rebuildPage(
            scope: "catalog", rebuildID: WireClient.newRebuildID(), cursor: token, limit: 50)
        #expect(other.status == 400)
        let otherScope = try client.rebuildPage(scope: "user:alice", rebuildID: rebuildID, cursor: token, limit: 50)
        #expect(otherScope.status == 400)
    }

    @Test("changing the limit within a session is 400")
    func limitChange() throws {
        let server = try RunningServer(rows: 100)
        let client = try WireClient.connect(server)
        let rebuildID = WireClient.newRebuildID()
        let first = try client.rebuildPage(scope: "catalog", rebuildID: rebuildID, cursor: nil, limit: 50)
        let token = try #require(first.object["cursor"]?.stringValue)
        let continued = try client.rebuildPage(scope: "catalog", rebuildID: rebuildID, cursor: token, limit: 51)
        #expect(continued.status == 400)
        #expect(continued.errorCode == "invalid_request")
        let restarted = try client.rebuildPage(scope: "catalog", rebuildID: rebuildID, cursor: nil, limit: 49)
        #expect(restarted.status == 400)
        // The right limit still works afterwards: a rejected request changes nothing.
        #expect(try client.rebuildPage(scope: "catalog", rebuildID: rebuildID, cursor: token, limit: 50).status == 200)
    }

    @Test("a session serves pages for exactly 24 hours, then every request needs a restart")
    func expiry() throws {
        let server = try RunningServer(rows: 100)
        let client = try WireClient.connect(server)
        let rebuildID = WireClient.newRebuildID()
        let first = try client.rebuildPage(scope: "catalog", rebuildID: rebuildID, cursor: nil, limit: 50)
        let token = try #require(first.object["cursor"]?.stringValue)
        server.clock.advance(hours: 23)
        server.clock.advance(microseconds: 3_599_999_999)
        #expect(try client.rebuildPage(scope: "catalog", rebuildID: rebuildID, cursor: token, limit: 50).status == 200)
        server.clock.advance(microseconds: 1)
        for cursor in [token, nil] {
            let reply = try client.rebuildPage(scope: "catalog", rebuildID: rebuildID, cursor: cursor, limit: 50)
            #expect(reply.status == 409)
            #expect(reply.errorCode == "rebuild_restart_required")
            #expect(reply.errorMember("scope_id") == .string("catalog"))
            #expect(reply.object["error"]?.objectValue?["retryable"] == .bool(false))
        }
        // A new attempt starts a new 24 hours.
        #expect(try client.rebuild(scope: "catalog", limit: 50).records.count == 140)
    }

    @Test("a lineage change or an operator expiry invalidates sessions and continuations alike")
    func lineageInvalidates() throws {
        let server = try RunningServer(rows: 60)
        let client = try WireClient.connect(server)
        let rebuildID = WireClient.newRebuildID()
        let first = try client.rebuildPage(scope: "catalog", rebuildID: rebuildID, cursor: nil, limit: 40)
        let token = try #require(first.object["cursor"]?.stringValue)
        try server.engine.inject(.changeMembership)
        for cursor in [token, nil] {
            let reply = try client.rebuildPage(scope: "catalog", rebuildID: rebuildID, cursor: cursor, limit: 40)
            #expect(reply.status == 409)
            #expect(reply.errorCode == "rebuild_restart_required")
        }

        let second = WireClient.newRebuildID()
        let page = try client.rebuildPage(scope: "catalog", rebuildID: second, cursor: nil, limit: 40)
        let next = try #require(page.object["cursor"]?.stringValue)
        try server.engine.inject(.expireRebuildSessions)
        let expired = try client.rebuildPage(scope: "catalog", rebuildID: second, cursor: next, limit: 40)
        #expect(expired.status == 409)
        #expect(expired.errorMember("scope_id") == .string("catalog"))
    }

    @Test("a later accepted write of the client invalidates its session; a new attempt waits for capture")
    func acceptedWriteInvalidates() throws {
        let server = try RunningServer(rows: 20, materialization: .manual)
        let client = try WireClient.connect(server)
        let rebuildID = WireClient.newRebuildID()
        let first = try client.rebuildPage(scope: "user:alice", rebuildID: rebuildID, cursor: nil, limit: 10)
        let token = try #require(first.object["cursor"]?.stringValue)
        let task = try #require(try client.rebuild(scope: "user:alice", limit: 100).records
            .first { $0["table"]?.stringValue == "tbl_tasks" })
        var row = try #require(task["row"]?.objectValue).members
        row = row.map { $0.key == "fld_task_title" ? JSONMember($0.key, .string("edited")) : $0 }
        try server.engine.acceptClientWrite(
            user: "alice", client: client.clientID, table: "tbl_tasks",
            pk: try #require(task["pk"]?.objectValue?["fld_task_id"]), row: .object(JSONObject(row)))

        for cursor in [token, nil] {
            let reply = try client.rebuildPage(scope: "user:alice", rebuildID: rebuildID, cursor: cursor, limit: 10)
            #expect(reply.status == 409)
            #expect(reply.errorMember("scope_id") == .string("user:alice"))
        }
        let waiting = try client.rebuildPage(
            scope: "user:alice", rebuildID: WireClient.newRebuildID(), cursor: nil, limit: 10)
        #expect(waiting.status == 503)
        #expect(waiting.errorCode == "capture_pending")
        #expect(waiting.header("Retry-After") == "5")
        server.engine.materialize()
        let run = try client.rebuild(scope: "user:alice", limit: 100)
        #expect(run.records.contains { $0["row"]?.objectValue?["fld_task_title"] == .string("edited") })
        let digest = try DigestCheck.scopeDigest(run.records, scope: "user:alice", manifest: client.manifest)
        #expect(run.checksum == digest)
    }

    @Test("rebuild gates: unassigned scope, wrong generation, stale schema and a foreign client")
    func gates() throws {
        let server = try RunningServer(rows: 10)
        let client = try WireClient.connect(server)
        let rebuildID = WireClient.newRebuildID()
        let foreign = try client.rebuildPage(scope: "user:bob", rebuildID: rebuildID, cursor: nil, limit: 10)
        #expect(foreign.status == 400)
        #expect(foreign.errorCode == "invalid_request")

        var stale = client
        stale.generation += 1
        let expired = try stale.rebuildPage(scope: "catalog", rebuildID: rebuildID, cursor: nil, limit: 10)
        #expect(expired.status == 409)
        #expect(expired.errorCode == "client_generation_expired")
        #expect(expired.errorMember("current_client_generation") == .number(JSONNumber(client.generation)))

        var body = try #require(client.rebuildBody(scope: "catalog", rebuildID: rebuildID, cursor: nil, limit: 10)
            .objectValue).members
        body = body.map {
            $0.key == "schema" ? JSONMember("schema", object(["version": .number(JSONNumber(1)),
                "hash": .string(String(repeating: "ab", count: 32))])) : $0
        }
        let mismatch = try server.post("/sync/rebuild", .object(JSONObject(body)))
        #expect(mismatch.status == 422)
        #expect(mismatch.errorCode == "schema_mismatch")

        let asBob = client.rebuildBody(scope: "catalog", rebuildID: rebuildID, cursor: nil, limit: 10)
        let bob = try server.post("/sync/rebuild", asBob, as: "bob")
        #expect(bob.status == 401)
        #expect(bob.errorCode == "auth_required")

        let malformed = try server.post("/sync/rebuild", client.rebuildBody(
            scope: "catalog", rebuildID: "NOT-A-UUID", cursor: nil, limit: 10))
        #expect(malformed.status == 400)
        let overLimit = try client.rebuildPage(scope: "catalog", rebuildID: rebuildID, cursor: nil, limit: 1001)
        #expect(overLimit.status == 400)
    }
}
