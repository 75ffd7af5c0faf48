@testable import SynchroServer
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// The capture → materialization path: writes are pull-visible only after the materializer ran,
/// in LSN order, with one stream entry per scope and effect (`spec/integrity.md` §6.1).
@Suite("Materializer")
struct MaterializerTests {
    static func category(_ id: Int64, _ name: String) -> JSONValue {
        object(["fld_category_id": .number(JSONNumber(id)), "fld_category_name": .string(name)])
    }

    @Test("in manual mode an operator write is invisible to pull and rebuild until materialize() runs")
    func manualVisibility() throws {
        let server = try RunningServer(rows: 10, materialization: .manual)
        let client = try WireClient.connect(server)
        let before = try client.rebuild(scope: "catalog", limit: 1000)
        let cursor = try #require(before.finalCursor)
        let version = try server.engine.operatorWrite(table: "tbl_categories", pk: .number(JSONNumber(3)),
                                                      row: Self.category(3, "Kitchen"))

        // Not this client's write: no fence, just the old boundary.
        let hidden = try client.pull([("catalog", cursor)])
        #expect(hidden.status == 200)
        #expect(hidden.object["changes"] == .array([]))
        #expect(DigestCheck.checksum(hidden.object, scope: "catalog") == before.checksum)
        #expect(try client.rebuild(scope: "catalog", limit: 1000).checksum == before.checksum)

        server.engine.materialize()
        let visible = try client.pull([("catalog", cursor)])
        let changes = try #require(visible.object["changes"]?.arrayValue).compactMap(\.objectValue)
        #expect(changes.count == 1)
        #expect(changes.first?["server_version"] == .string(version))
        #expect(changes.first?["pk"] == object(["fld_category_id": .number(JSONNumber(3))]))
        let after = try client.rebuild(scope: "catalog", limit: 1000)
        #expect(after.checksum != before.checksum)
        #expect(DigestCheck.checksum(visible.object, scope: "catalog") == after.checksum)
    }

    @Test("several captured writes of one row materialize in LSN order and pull delivers only the latest")
    func lsnOrder() throws {
        let server = try RunningServer(rows: 10, materialization: .manual)
        let client = try WireClient.connect(server)
        let cursor = try #require(try client.rebuild(scope: "catalog", limit: 1000).finalCursor)
        var versions: [String] = []
        for name in ["one", "two", "three"] {
            versions.append(try server.engine.operatorWrite(
                table: "tbl_categories", pk: .number(JSONNumber(7)), row: Self.category(7, name)))
        }
        #expect(Set(versions).count == 3)
        server.engine.materialize()
        server.engine.materialize()  // nothing left: a no-op
        let changes = try #require(try client.pull([("catalog", cursor)]).object["changes"]?.arrayValue)
        #expect(changes.count == 1)
        let change = try #require(changes.first?.objectValue)
        #expect(change["row"] == Self.category(7, "three"))
        #expect(change["server_version"] == .string(versions[2]))
        _ = try DigestCheck.verifyRow(change, manifest: client.manifest)
    }

    @Test("a new row enters its scope and an accepted client write holds only that client's reads")
    func newRowAndFence() throws {
        let server = try RunningServer(rows: 10, materialization: .manual)
        let alice = try WireClient.connect(server)
        let bob = try WireClient.connect(server, user: "bob")
        let cursor = try #require(try alice.rebuild(scope: "user:alice", limit: 1000).finalCursor)
        let task = object([
            "fld_task_id": .string("task-alice-new"), "fld_task_owner": .string("alice"),
            "fld_task_title": .string("write tests"), "fld_task_done": .bool(false), "fld_task_due": .null,
            "fld_task_position": .number(JSONNumber(99)),
        ])
        try server.engine.acceptClientWrite(
            user: "alice", client: alice.clientID, table: "tbl_tasks", pk: .string("task-alice-new"), row: task)
        #expect(try alice.pull([("user:alice", cursor)]).errorCode == "capture_pending")
        #expect(try alice.rebuildPage(scope: "user:alice", rebuildID: WireClient.newRebuildID(), cursor: nil, limit: 5)
            .errorCode == "capture_pending")
        #expect(try bob.pull([("user:bob", nil)]).status == 200)

        server.engine.materialize()
        let page = try alice.pull([("user:alice", cursor)]).object
        let changes = try #require(page["changes"]?.arrayValue).compactMap(\.objectValue)
        #expect(changes.count == 1)
        #expect(changes.first?["op"] == .string("upsert"))
        // Rows travel as canonical JSON: the member order is RFC 8785's, not the writer's.
        #expect(try CanonicalJSON.encode(try #require(changes.first?["row"])) == CanonicalJSON.encode(task))
        #expect(DigestCheck.checksum(page, scope: "user:alice")
            == (try alice.rebuild(scope: "user:alice", limit: 1000).checksum))
    }

    @Test("operator writes are validated against the manifest and a rejected write changes nothing")
    func validation() throws {
        let server = try RunningServer(rows: 10)
        let client = try WireClient.connect(server)
        let before = try client.rebuild(scope: "catalog", limit: 1000).checksum
        #expect(throws: OperatorWriteError.unknownTable) {
            try server.engine.operatorWrite(table: "tbl_nope", pk: .number(JSONNumber(1)), row: Self.category(1, "x"))
        }
        #expect(throws: OperatorWriteError.invalidRow(rule: "missing_field")) {
            try server.engine.operatorWrite(table: "tbl_categories", pk: .number(JSONNumber(1)),
                                            row: object(["fld_category_id": .number(JSONNumber(1))]))
        }
        #expect(throws: OperatorWriteError.self) {
            try server.engine.operatorWrite(
                table: "tbl_categories", pk: .number(JSONNumber(2)), row: Self.category(1, "x"))
        }
        #expect(throws: OperatorWriteError.self) {
            try server.engine.operatorWrite(table: "tbl_categories", pk: .string("1"), row: Self.category(1, "x"))
        }
        #expect(throws: OperatorWriteError.rowNotFound) {
            try server.engine.operatorDelete(table: "tbl_categories", pk: .number(JSONNumber(123_456)))
        }
        let error = OperatorWriteError.invalidRow(rule: "missing_field")
        #expect(!error.description.contains("fld_category_id"))
        #expect(try client.rebuild(scope: "catalog", limit: 1000).checksum == before)
    }
}

/// The background materializer: a write waits for the worker's pass; a paused worker does nothing.
@Suite("Background materialization")
struct BackgroundMaterializationTests {
    static func category(_ id: Int64, _ name: String) -> JSONValue {
        object(["fld_category_id": .number(JSONNumber(id)), "fld_category_name": .string(name)])
    }

    @Test("a write becomes visible at the worker's next pass, not before, and never while paused")
    func backgroundPass() throws {
        let server = try RunningServer(rows: 20, materialization: .background(interval: .seconds(3600)))
        let client = try WireClient.connect(server)
        let cursor = try #require(try client.rebuild(scope: "catalog", limit: 1000).finalCursor)
        _ = try server.engine.operatorWrite(
            table: "tbl_categories", pk: .number(JSONNumber(4)), row: Self.category(4, "Garden"))
        #expect(try client.pull([("catalog", cursor)]).object["changes"] == .array([]))

        try server.engine.inject(.pauseMaterialization)
        server.engine.runMaterializerPass()
        #expect(try client.pull([("catalog", cursor)]).object["changes"] == .array([]))

        try server.engine.inject(.resumeMaterialization)
        let changes = try #require(try client.pull([("catalog", cursor)]).object["changes"]?.arrayValue)
        #expect(changes.count == 1)

        _ = try server.engine.operatorWrite(
            table: "tbl_categories", pk: .number(JSONNumber(5)), row: Self.category(5, "Tools"))
        server.engine.runMaterializerPass()
        let next = try #require(try client.pull([("catalog", cursor)]).object["changes"]?.arrayValue)
        #expect(next.count == 2)
        server.engine.shutdown()
        server.engine.shutdown()
    }
}
