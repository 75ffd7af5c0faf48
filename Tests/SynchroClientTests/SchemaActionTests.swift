import Foundation
import SQLiteKit
import Synchronization
import SynchroClient
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// Connect schema actions over an installed schema (`spec/wire-protocol.md` §3.3, §3.4, §12.4): a real loopback
/// server publishes a successor manifest and the client migrates its real SQLite file.
@Suite("Schema actions")
struct SchemaActionTests {
    let fixture: SyncFixture

    init() throws {
        fixture = try SyncFixture(rows: 60, pageLimit: 40)
        try fixture.connectAndRebuild()
    }

    @Test("replace (class 2) adds the column, archives and activates the schema and installs replaced cursors")
    func replaceClassTwo() throws {
        let survivors = try LocalSurvivors(fixture)
        let before = try fixture.scopes()
        let target = try SchemaPublisher(fixture.server).publish(transition: "class_2") {
            $0.addField("tbl_notes", "fld_note_mood", type: "string")
        }
        try fixture.connect()

        #expect(try fixture.count("SELECT count(*) FROM pragma_table_info('notes') WHERE name = 'fld_note_mood'")
            == 1)
        #expect(try activeReference() == target)
        #expect(try fixture.count("SELECT count(*) FROM _synchro_schema_archive") == 2)
        #expect(try fixture.count(
            "SELECT count(*) FROM _synchro_schema_archive WHERE schema_version = \(target.version)") == 1)
        let after = try fixture.scopes()
        #expect(after.map(\.id) == before.map(\.id))
        for (old, new) in zip(before, after) {
            // Every cursor is a same-position replacement under the new hash, never the old one relabelled.
            #expect(new.cursor != nil)
            #expect(new.cursor != old.cursor)
        }
        try survivors.verify(fixture)

        // Pull accepts the replaced cursors and verifies every scope checksum under the new schema.
        let outcome = try PullApplier(context: fixture.context).pull()
        #expect(outcome.rebuildRequired.isEmpty)
        #expect(try fixture.scopes().allSatisfy { $0.cursor != nil && $0.checksum != nil })
        try survivors.verify(fixture)
    }

    @Test("rebuild_local (class 3 on catalog) makes exactly catalog rebuild-required, and a rebuild verifies")
    func rebuildLocalClassThree() throws {
        let survivors = try LocalSurvivors(fixture)
        let before = Dictionary(uniqueKeysWithValues: try fixture.scopes().map { ($0.id, $0.cursor) })
        let target = try SchemaPublisher(fixture.server).publish(transition: "class_3", affected: ["catalog"]) {
            $0.addField("tbl_products", "fld_product_origin", type: "string")
        }
        try fixture.connect()

        #expect(try activeReference() == target)
        #expect(try fixture.count(
            "SELECT count(*) FROM pragma_table_info('products') WHERE name = 'fld_product_origin'") == 1)
        for scope in try fixture.scopes() {
            if scope.id == "catalog" {
                #expect(scope.cursor == nil)
                #expect(scope.checksum == nil)
            } else {
                #expect(scope.cursor != nil)
                #expect(scope.cursor != before[scope.id] ?? nil)
            }
        }
        // Rebuild drops nothing the rebuild does not own: catalog rows stay until the rebuild replaces them.
        #expect(try fixture.count("SELECT count(*) FROM products") > 0)
        try survivors.verify(fixture)

        try RebuildApplier(context: fixture.context).rebuild(scope: "catalog")
        #expect(try fixture.scopes().allSatisfy { $0.cursor != nil && $0.checksum != nil })
        #expect(try PullApplier(context: fixture.context).pull().rebuildRequired.isEmpty)
        try survivors.verify(fixture)
    }

    @Test("a cycle after rebuild_local pushes queued intent first, then rebuilds catalog and pulls to the head")
    func rebuildLocalCycle() throws {
        _ = try LocalSurvivors(fixture)
        try SchemaPublisher(fixture.server).publish(transition: "class_3", affected: ["catalog"]) {
            $0.addField("tbl_products", "fld_product_origin", type: "string")
        }
        let transport = CycleTransport(server: fixture.server)
        let context = fixture.context(over: transport)
        let summary = try CycleRecorder().cycle(context).run()

        let paths = transport.paths
        #expect(paths.first == "/sync/connect" && paths.last == "/sync/pull")
        let firstPush = try #require(paths.firstIndex(of: "/sync/push"))
        #expect(firstPush < (paths.firstIndex(of: "/sync/rebuild") ?? paths.count))
        #expect(summary.mutationsAccepted == 1)
        #expect(summary.scopesRebuilt == ["catalog"])
        #expect(try fixture.scopes().allSatisfy { $0.cursor != nil && $0.checksum != nil })
        #expect(try fixture.count("SELECT count(*) FROM local_drafts") == 1)
    }

    @Test("unsupported (class 4) records a blocking error, changes nothing else and stops later connects")
    func unsupportedClassFour() throws {
        _ = try LocalSurvivors(fixture)
        try SchemaPublisher(fixture.server).publish(transition: "class_4") {
            $0.removeField("tbl_tasks", "fld_task_due")
        }
        let before = try fixture.storeFixture.inspect(databaseFingerprint)

        #expect(throws: SyncError.invalidState(
            reason: "the installed schema is unsupported by the server (incompatible_schema_transition)")
        ) { try fixture.connect() }

        let error = try fixture.storeFixture.inspect { connection in
            try connection.query("""
                SELECT operation, code, retryable, recovery_action, metadata_json FROM _synchro_blocking_error
                """) { "\(try $0.text(at: 0)) \(try $0.text(at: 1)) \($0.int64(at: 2)) \(try $0.text(at: 3)) "
                    + (try $0.text(at: 4)) }
        }
        #expect(error == [
            "connect incompatible_schema_transition 0 schema_reset {\"reason\":\"incompatible_schema_transition\"}",
        ])
        let after = try fixture.storeFixture.inspect(databaseFingerprint)
        #expect(after.filter { !$0.hasPrefix("_synchro_blocking_error:") }
            == before.filter { !$0.hasPrefix("_synchro_blocking_error:") })

        // The next connect reports the stored state without sending anything.
        let sent = Mutex(0)
        fixture.transport.setEdit { _, reply in
            sent.withLock { $0 += 1 }
            return reply
        }
        #expect(throws: SyncError.self) { try fixture.connect() }
        #expect(sent.withLock { $0 } == 0)
        #expect(try fixture.storeFixture.inspect(databaseFingerprint) == after)
    }

    @Test("a manifest that is not the announced reference is refused before any write")
    func mismatchedDefinitionRefused() throws {
        try SchemaPublisher(fixture.server).publish(transition: "class_2") {
            $0.addField("tbl_notes", "fld_note_mood", type: "string")
        }
        let before = try fixture.storeFixture.inspect(databaseFingerprint)
        fixture.transport.setEdit { path, reply in
            guard path == "/sync/connect", var json = try? StrictJSONParser().parse(reply.body),
                  var members = json.objectValue?.members,
                  let index = members.firstIndex(where: { $0.key == "schema" }),
                  var schema = members[index].value.objectValue?.members
            else { return reply }
            schema = schema.map { $0.key == "version" ? JSONMember("version", .number(JSONNumber(99))) : $0 }
            members[index] = JSONMember("schema", .object(JSONObject(schema)))
            json = .object(JSONObject(members))
            return SyncReply(status: reply.status, body: (try? CanonicalJSON.encode(json)) ?? reply.body)
        }
        #expect(throws: SyncError.contract(rule: "manifest_reference_mismatch", member: "schema_definition")) {
            try fixture.connect()
        }
        #expect(try fixture.storeFixture.inspect(databaseFingerprint) == before)
    }

    private func activeReference() throws -> SchemaReference {
        try fixture.storeFixture.inspect { connection in
            let version = try connection.scalar("SELECT value FROM _synchro_meta WHERE key = 'schema_version'")
            let hash = try connection.scalar("SELECT value FROM _synchro_meta WHERE key = 'schema_hash'")
            return try SchemaReference(
                version: Int64(version?.textValue ?? "") ?? -1, hash: hash?.textValue ?? "")
        }
    }
}

/// A local-only table with a row and one pending local mutation, both of which every compatible migration keeps.
private struct LocalSurvivors {
    let ledger: [String]

    init(_ fixture: SyncFixture) throws {
        try fixture.storeFixture.inspect { connection in
            try connection.execute("CREATE TABLE local_drafts (id TEXT PRIMARY KEY, body TEXT)")
            try connection.execute("INSERT INTO local_drafts VALUES ('d1', 'kept')")
        }
        try fixture.store.execute(
            "INSERT INTO notes (id, owner_id, title, pinned, updated_at) VALUES (?, 'alice', 'Queued', 0, ?)",
            [.text("note-schema-1"), .text("2026-01-02T03:04:05.000Z")])
        ledger = try fixture.storeFixture.ledgerSummary()
        #expect(ledger.count == 1)
    }

    func verify(_ fixture: SyncFixture) throws {
        #expect(try fixture.storeFixture.ledgerSummary() == ledger)
        #expect(try fixture.count("SELECT count(*) FROM local_drafts WHERE body = 'kept'") == 1)
        #expect(try fixture.count("SELECT count(*) FROM notes WHERE id = 'note-schema-1'") == 1)
    }
}

/// Publishes successors of the served manifest with the operator credential (`docs/server.md`,
/// "Schema publication"), through the shared ``SchemaPublication``.
struct SchemaPublisher {
    let server: RunningServer

    init(_ server: RunningServer) {
        self.server = server
    }

    /// Edits the served manifest, publishes it as the next version of `transition` and returns its reference.
    @discardableResult
    func publish(
        transition: String, affected: [String]? = nil, defaults: JSONValue? = nil,
        _ edit: (inout ManifestEdit) -> Void
    ) throws -> SchemaReference {
        let publication = SchemaPublication(operatorToken: RunningServer.operatorToken) { method, path, body, headers in
            let reply = try server.send(method, path, body: body, headers: headers)
            return (reply.status, reply.body)
        }
        return try publication.publish(transition: transition, affected: affected, defaults: defaults, edit)
    }
}
