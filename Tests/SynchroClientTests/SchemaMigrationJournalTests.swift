import Foundation
import SQLiteKit
import Synchronization
@testable import SynchroClient
import SynchroProtocol
import Testing
import _SeedkitTestSupport
@testable import SynchroStore

/// The `_synchro_schema_migration` journal (`spec/client-store.md` §4.13, §10) and the explicit `schema_reset`
/// recovery (`spec/wire-protocol.md` §3.7, §10.3), on real files migrated by a loopback server's schema actions.
@Suite("Schema migration journal and schema reset")
struct SchemaMigrationJournalTests {
    let fixture: SyncFixture
    let transport: CycleTransport

    init() throws {
        fixture = try SyncFixture(rows: 60, pageLimit: 40)
        transport = CycleTransport(server: fixture.server)
        _ = try cycle().run()
        try fixture.storeFixture.inspect { connection in
            try connection.execute("CREATE TABLE local_drafts (id TEXT PRIMARY KEY, body TEXT)")
            try connection.execute("INSERT INTO local_drafts VALUES ('d1', 'kept')")
        }
        try fixture.store.execute(
            "INSERT INTO notes (id, owner_id, title, pinned, updated_at) VALUES (?, 'alice', 'Queued', 0, ?)",
            [.text("note-journal-1"), .text("2026-01-02T03:04:05.000Z")])
    }

    var context: SyncContext { fixture.context(over: transport) }

    func cycle() -> SyncCycle { CycleRecorder().cycle(context) }

    /// `(phase, action, affected, is_schema_reset, plan JSON, plan hash)` of the stored journal, if any.
    func journal() throws -> [String]? {
        try fixture.storeFixture.inspect { connection in
            try connection.rows("""
                SELECT phase, action, affected_scopes_json, is_schema_reset, migration_plan_json, migration_plan_hash
                FROM _synchro_schema_migration
                """).first.map { $0.map { $0.textValue ?? String($0.integerValue ?? -1) } }
        }
    }

    func servedManifest() throws -> ClientManifest {
        try ClientManifest(json: try fixture.server.send("GET", "/sync/schema", body: [], headers: []).json)
    }

    func publishClassThree() throws -> SchemaReference {
        try SchemaPublisher(fixture.server).publish(transition: "class_3", affected: ["catalog"]) {
            $0.addField("tbl_products", "fld_product_origin", type: "string")
        }
    }

    /// The local-only table, the queued mutation and its protected row all survived.
    func expectSurvivors(sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(try fixture.count("SELECT count(*) FROM local_drafts WHERE body = 'kept'") == 1,
                sourceLocation: sourceLocation)
        #expect(try fixture.count("SELECT count(*) FROM notes WHERE id = 'note-journal-1'") == 1,
                sourceLocation: sourceLocation)
        #expect(try fixture.count(
            "SELECT count(*) FROM _synchro_pending_changes WHERE record_id = 'note-journal-1'") == 1,
                sourceLocation: sourceLocation)
    }

    @Test("rebuild_local keeps an applied journal with its plan until the cycle has rebuilt the affected scope")
    func appliedJournalUntilRebuilt() throws {
        let target = try publishClassThree()
        try ConnectExchange(context: context).run()
        let stored = try #require(try journal())
        #expect(Array(stored.prefix(4)) == ["applied", "rebuild_local", #"["catalog"]"#, "0"])
        let plan = #"{"operations":[{"field_id":"fld_product_origin","kind":"add_column","table_id":"tbl_products"},"#
            + #"{"kind":"reinstall_capture"},{"kind":"activate_manifest"},{"kind":"apply_scope_state"}],"#
            + #""plan_version":1,"schema_reset":false,"source":{"hash":"8d2e3503e86a2ad28deff4980ecc104635dc6e5c0"#
            + #"a9f4dc6b17c0c135cba40ee","version":1},"target":{"hash":"\#(target.hash)","version":2}}"#
        #expect(stored[4] == plan)
        let hash = SHA256.hash(Array("synchro:v3:client-migration-plan:v1".utf8) + [0] + Array(plan.utf8))
        #expect(stored[5] == Hex.encode(hash))
        try expectSurvivors()

        let summary = try cycle().run()
        #expect(summary.scopesRebuilt == ["catalog"])
        #expect(try journal() == nil)
        try expectSurvivors()
    }

    @Test("a replace over the installed schema leaves no journal once applied; a class 3 non-null field keeps one")
    func replaceAndRefusal() throws {
        try SchemaPublisher(fixture.server).publish(transition: "class_2") {
            $0.addField("tbl_notes", "fld_note_mood", type: "string")
        }
        try ConnectExchange(context: context).run()
        #expect(try journal() == nil)

        let defaults = JSONValue.object(JSONObject([
            JSONMember("tbl_products", .object(JSONObject([JSONMember("fld_product_origin", .string("x"))]))),
        ]))
        try SchemaPublisher(fixture.server).publish(transition: "class_3", affected: ["catalog"], defaults: defaults) {
            $0.addField("tbl_products", "fld_product_origin", type: "string", nullable: false)
        }
        try ConnectExchange(context: context).run()
        #expect(try journal().map { Array($0.prefix(3)) } == ["applied", "rebuild_local", #"["catalog"]"#])
    }

    @Test("a compatible plan refuses what no class 2 or 3 transition contains, naming the rule", arguments: [
        ("tasks", "field_removed"), ("notes", "nullability_tightened"), ("products", "field_type_changed"),
    ])
    func incompatibleChangeRefused(table: String, rule: String) throws {
        let target = try servedManifest()
        let source = target.localSchema.map { local -> LocalSchemaTable in
            guard local.tableName == table else { return local }
            var columns = local.columns
            switch rule {
            case "field_removed":
                columns.append(LocalSchemaColumn(
                    fieldID: "fld_gone", name: "gone", logicalType: .string, nullable: true, writable: true,
                    precision: nil, scale: nil, sqliteDefaultSQL: nil, isPrimaryKey: false))
            default:
                let index = columns.firstIndex { $0.name == "title" } ?? 0
                let old = columns[index]
                columns[index] = LocalSchemaColumn(
                    fieldID: old.fieldID, name: old.name, logicalType: rule == "field_type_changed" ? .int : old.logicalType,
                    nullable: rule == "nullability_tightened" ? true : old.nullable, writable: old.writable,
                    precision: nil, scale: nil, sqliteDefaultSQL: nil, isPrimaryKey: false)
            }
            return LocalSchemaTable(
                tableID: local.tableID, relationID: local.relationID, tableName: local.tableName,
                primaryKeyFieldID: local.primaryKeyFieldID, createdAtFieldID: local.createdAtFieldID,
                updatedAtFieldID: local.updatedAtFieldID, deletedAtFieldID: local.deletedAtFieldID,
                updatedAtColumn: local.updatedAtColumn, deletedAtColumn: local.deletedAtColumn,
                composition: local.composition, primaryKey: local.primaryKey, columns: columns, indexes: local.indexes)
        }
        #expect(throws: ClientStoreError.schemaApplication(.incompatibleChange(table: table, rule: rule))) {
            try SchemaMigrationPlan.derive(from: source, sourceReference: nil, to: target, reset: false)
        }
    }

    @Test("a prepared journal left by a dead process is resumed before any request")
    func preparedJournalResumes() throws {
        let target = try publishClassThree()
        let manifest = try servedManifest()
        #expect(manifest.reference == target)
        // What a process killed right after `schema.prepared` leaves behind.
        _ = try SchemaMigrationJournal.prepare(
            target: manifest, action: "rebuild_local", affected: ["catalog"], cursorUpdates: [], reset: false,
            in: fixture.store)
        #expect(try journal()?.first == "prepared")
        try fixture.storeFixture.reopen()

        transport.reset()
        let summary = try cycle().run()
        // The migration ran before the connect, which therefore presents the target schema and gets `none`.
        let connect = try #require(transport.bodies("/sync/connect").first)
        let schema = try #require(try StrictJSONParser().parse(connect).objectValue?["schema"])
        #expect(try SchemaReference(json: schema) == target)
        // This hand-prepared journal carries no replacement cursor, so user:alice's historical cursor is refused
        // by the pull and that scope is rebuilt too.
        #expect(summary.scopesRebuilt == ["catalog", "user:alice"])
        #expect(try journal() == nil)
        #expect(try fixture.count(
            "SELECT count(*) FROM pragma_table_info('products') WHERE name = 'fld_product_origin'") == 1)
        try expectSurvivors()
        #expect(try StoreValidator(path: fixture.storeFixture.path).validate().findings == [])
    }

    @Test("a prepared journal whose plan no longer derives is rolled back; the connect migrates afresh")
    func preparedJournalRollsBack() throws {
        _ = try publishClassThree()
        let manifest = try servedManifest()
        _ = try SchemaMigrationJournal.prepare(
            target: manifest, action: "rebuild_local", affected: ["catalog"], cursorUpdates: [], reset: false,
            in: fixture.store)
        try fixture.storeFixture.inspect { connection in
            try connection.execute("UPDATE _synchro_schema_migration SET migration_plan_hash = 'not-the-plan'")
        }
        transport.reset()
        let summary = try cycle().run()
        let connect = try #require(transport.bodies("/sync/connect").first)
        #expect(try StrictJSONParser().parse(connect).objectValue?["schema"]?.objectValue?["version"]
            == .number(JSONNumber(1)))
        #expect(summary.scopesRebuilt == ["catalog"])
        #expect(try journal() == nil)
        try expectSurvivors()
    }

    @Test("schema_reset after unsupported replaces synced materialization and keeps local data and intent")
    func schemaReset() throws {
        try SchemaPublisher(fixture.server).publish(transition: "class_4") {
            $0.removeField("tbl_tasks", "fld_task_due")
        }
        #expect(throws: SyncCycleError.self) { try cycle().run() }
        #expect(try fixture.count("SELECT count(*) FROM _synchro_blocking_error") == 1)
        let ledger = try fixture.storeFixture.ledgerSummary()

        transport.reset()
        try ConnectExchange(context: context).resetSchema()
        let connect = try #require(transport.bodies("/sync/connect").first)
        #expect(try StrictJSONParser().parse(connect).objectValue?["schema_reset"] == .bool(true))
        #expect(try fixture.count("SELECT count(*) FROM _synchro_blocking_error") == 0)
        #expect(try fixture.count("SELECT count(*) FROM pragma_table_info('tasks') WHERE name = 'due_date'") == 0)
        // Synced materialization replaced: no provenance, no row version, every scope rebuild-required.
        #expect(try fixture.count("SELECT count(*) FROM _synchro_scope_rows") == 0)
        #expect(try fixture.count("SELECT count(*) FROM _synchro_row_versions") == 0)
        #expect(try fixture.count("SELECT count(*) FROM _synchro_scopes WHERE cursor IS NULL") == 2)
        #expect(try fixture.count("SELECT count(*) FROM tasks") == 0)
        #expect(try journal().map { Array($0.prefix(4)) }
            == ["applied", "rebuild_local", #"["catalog","user:alice"]"#, "1"])
        #expect(try fixture.storeFixture.ledgerSummary() == ledger)
        try expectSurvivors()

        let summary = try cycle().run()
        #expect(summary.scopesRebuilt == ["catalog", "user:alice"])
        #expect(summary.mutationsAccepted == 1)
        #expect(try journal() == nil)
        #expect(try fixture.count("SELECT count(*) FROM tasks") > 0)
        try expectSurvivors()
        #expect(try StoreValidator(path: fixture.storeFixture.path).validate().findings == [])
    }

    @Test("a reset is never sent without a stored unsupported error")
    func resetNeedsUnsupported() throws {
        transport.reset()
        #expect(throws: SyncCycleError.schemaResetNotPending) { try cycle().runSchemaReset() }
        #expect(throws: SyncError.invalidState(reason: "no unsupported schema awaits a reset")) {
            try ConnectExchange(context: context).resetSchema()
        }
        #expect(transport.paths.isEmpty)
    }
}
