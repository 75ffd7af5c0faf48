import Foundation
import SQLiteKit
import SynchroClient
import SynchroProtocol
import Testing
import _SeedkitTestSupport
import SynchroStore

/// Schema evolution end to end (issue 16 item 1, `spec/wire-protocol.md` §12): a warmed store with local intent,
/// the reference server publishes one change of each class the server can publish, and whole sync cycles take the
/// store to the same rows as a fresh store, validated, with the intent kept.
@Suite("Schema evolution")
struct SchemaEvolutionTests {
    let store: EvolvingStore

    init() throws {
        store = try EvolvingStore()
    }

    // MARK: Class 2 (`replace`)

    @Test("class 2: nullable false → true rebuilds the table in place, keeping rows, intent, indexes and capture")
    func relaxNullability() throws {
        let notes = try store.fixture.count("SELECT count(*) FROM notes")
        let target = try store.publish("class_2") { $0.setField("tbl_notes", "fld_note_title", "nullable", .bool(true)) }
        let summary = try store.cycle()
        #expect(summary.scopesRebuilt.isEmpty)
        #expect(try store.fixture.count("SELECT \"notnull\" FROM pragma_table_info('notes') WHERE name = 'title'") == 0)
        #expect(try store.fixture.count("SELECT \"notnull\" FROM pragma_table_info('notes') WHERE name = 'owner_id'")
            == 1)
        #expect(try store.fixture.count("SELECT count(*) FROM notes") == notes)
        #expect(try store.fixture.count(
            "SELECT count(*) FROM sqlite_schema WHERE name = 'notes_owner_updated' AND type = 'index'") == 1)
        #expect(try store.fixture.count("SELECT count(*) FROM sqlite_schema WHERE name LIKE '_synchro_migration_%'")
            == 0)
        try store.expectConverged(on: target)

        // The relaxed column takes NULL, and the write is captured and accepted like any other.
        try store.fixture.store.execute(
            "INSERT INTO notes (id, owner_id, title, pinned, updated_at) VALUES ('note-untitled', 'alice', NULL, 0, ?)",
            [.text("2026-01-02T03:04:05.000Z")])
        #expect(try store.cycle().mutationsAccepted == 1)
        try store.expectConverged(on: target)
    }

    @Test("class 2: a new nullable field is appended and the queued intent keeps its authored schema")
    func newNullableField() throws {
        let target = try store.publish("class_2") { $0.addField("tbl_notes", "fld_note_mood", type: "string") }
        #expect(try store.cycle().scopesRebuilt.isEmpty)
        #expect(try store.fixture.count("SELECT count(*) FROM pragma_table_info('notes') WHERE name = 'fld_note_mood'")
            == 1)
        try store.expectConverged(on: target)
    }

    @Test("class 2: a new (empty) table is created with its indexes and capture, and takes writes")
    func newTable() throws {
        let target = try store.publish("class_2") { edit in
            edit.addTable(ManifestEdit.labelsTable(textNullable: false, indexes: [.object(JSONObject([
                JSONMember("index_id", .string("idx_labels_text")), JSONMember("name", .string("labels_text")),
                JSONMember("field_ids", .array([.string("fld_label_text")])), JSONMember("unique", .bool(false)),
            ]))]))
        }
        #expect(try store.cycle().scopesRebuilt.isEmpty)
        #expect(try store.fixture.count("SELECT count(*) FROM sqlite_schema WHERE name = 'labels_text'") == 1)
        #expect(try store.fixture.count("SELECT count(*) FROM sqlite_schema WHERE tbl_name = 'labels' AND type = 'trigger'")
            == 3)
        try store.expectConverged(on: target)
    }

    @Test("class 2: an added index is created and a dropped one removed; an application index stays")
    func indexAddedAndDropped() throws {
        try store.fixture.storeFixture.inspect { try $0.execute("CREATE INDEX app_tasks_title ON tasks (title)") }
        let target = try store.publish("class_2") { edit in
            edit.setTable("tbl_tasks", "indexes", .array([]))
            edit.setTable("tbl_notes", "indexes", .array(edit.indexes("tbl_notes") + [.object(JSONObject([
                JSONMember("index_id", .string("idx_notes_title")), JSONMember("name", .string("notes_title")),
                JSONMember("field_ids", .array([.string("fld_note_title")])), JSONMember("unique", .bool(false)),
            ]))]))
        }
        #expect(try store.cycle().scopesRebuilt.isEmpty)
        let indexes = try store.fixture.storeFixture.inspect { connection in
            try connection.query(
                "SELECT name FROM sqlite_schema WHERE type = 'index' AND sql IS NOT NULL ORDER BY name") {
                try $0.text(at: 0)
            }
        }
        #expect(indexes.contains("notes_title") && indexes.contains("notes_owner_updated"))
        #expect(!indexes.contains("tasks_owner_position"))
        #expect(indexes.contains("app_tasks_title"))
        try store.expectConverged(on: target)
    }

    @Test("class 2: writable false → true reinstalls capture so the field is authored")
    func writabilityAdded() throws {
        _ = try store.publish("class_2") { edit in
            edit.addField("tbl_tasks", "fld_task_tag", type: "string")
            edit.setField("tbl_tasks", "fld_task_tag", "writable", .bool(false))
        }
        try store.cycle()
        let target = try store.publish("class_2") { $0.setField("tbl_tasks", "fld_task_tag", "writable", .bool(true)) }
        try store.cycle()
        try store.fixture.store.execute(
            "UPDATE tasks SET fld_task_tag = 'urgent' WHERE id = (SELECT min(id) FROM tasks)")
        let authored = try store.fixture.count("""
            SELECT count(*) FROM _synchro_mutation_values WHERE field_id = 'fld_task_tag'
            """)
        #expect(authored == 1)
        #expect(try store.cycle().mutationsAccepted == 1)
        try store.expectConverged(on: target)
        #expect(try store.fixture.count("SELECT count(*) FROM tasks WHERE fld_task_tag = 'urgent'") == 1)
    }

    // MARK: Class 3 (`rebuild_local`)

    /// The reference server refuses the queued insert authored before the field existed (`validation_failed`: it
    /// applies no default to an authored insert), so that intent ends as a retained terminal rejection with its
    /// authored payload unchanged, and its row stays protected; everything else converges.
    @Test("class 3: a new non-null field with a server default is added and exactly the affected scope rebuilt")
    func newNonNullFieldWithDefault() throws {
        let defaults = JSONValue.object(JSONObject([
            JSONMember("tbl_notes", .object(JSONObject([JSONMember("fld_note_colour", .string("grey"))]))),
        ]))
        let target = try store.publish("class_3", affected: ["user:{user}"], defaults: defaults) {
            $0.addField("tbl_notes", "fld_note_colour", type: "string", nullable: false)
        }
        let summary = try store.cycle()
        #expect(summary.scopesRebuilt == ["user:alice"])
        #expect(summary.mutationsAccepted == 1)
        #expect(summary.mutationsRejected == 1)
        try store.expectConverged(on: target, retainedRejections: ["note-evolution-1"])
        #expect(try store.fixture.count("""
            SELECT count(*) FROM _synchro_rejected_mutations WHERE record_id = 'note-evolution-1'
                AND code = 'validation_failed' AND json_extract(mutation_json, '$.authored_schema.version') = 1
            """) == 1)
        #expect(try store.fixture.count(
            "SELECT count(*) FROM notes WHERE fld_note_colour IS NULL AND id <> 'note-evolution-1'") == 0)
    }

    @Test("class 3: a new nullable field with historical values rebuilds the affected scope only")
    func newFieldWithValues() throws {
        let defaults = JSONValue.object(JSONObject([
            JSONMember("tbl_products", .object(JSONObject([JSONMember("fld_product_origin", .string("EU"))]))),
        ]))
        let target = try store.publish("class_3", affected: ["catalog"], defaults: defaults) {
            $0.addField("tbl_products", "fld_product_origin", type: "string")
        }
        #expect(try store.cycle().scopesRebuilt == ["catalog"])
        try store.expectConverged(on: target)
        #expect(try store.fixture.count("SELECT count(*) FROM products WHERE fld_product_origin = 'EU'")
            == store.fixture.count("SELECT count(*) FROM products"))
    }

    @Test("class 3: a composition change (single_scope → multi_scope) rebuilds the affected scope")
    func compositionChange() throws {
        let target = try store.publish("class_3", affected: ["catalog"]) {
            $0.setTable("tbl_products", "composition", .string("multi_scope"))
        }
        #expect(try store.cycle().scopesRebuilt == ["catalog"])
        try store.expectConverged(on: target)
        let local = try store.fixture.storeFixture.inspect { connection in
            try LocalSchemaJSON.decode(try connection.scalar(
                "SELECT value FROM _synchro_meta WHERE key = 'local_schema'")?.textValue ?? "[]")
        }
        #expect(local.first { $0.tableID == "tbl_products" }?.composition == "multi_scope")
    }

    @Test("class 3: a relation change rebuilds the affected scope and keeps the notes' intent")
    func relationChange() throws {
        let target = try store.publish("class_3", affected: ["user:{user}"]) {
            $0.setTable("tbl_notes", "relation_id", .string("rel_notes_v2"))
        }
        let summary = try store.cycle()
        #expect(summary.scopesRebuilt == ["user:alice"])
        #expect(summary.mutationsAccepted == 2)
        try store.expectConverged(on: target)
    }

    // MARK: Class 4 (`unsupported`)

    @Test("class 4: a stored blocking error until schema_reset; intent on the removed table ends schema_incompatible")
    func unsupportedThenReset() throws {
        try store.fixture.store.execute("UPDATE tasks SET title = 'Doomed' WHERE id = (SELECT min(id) FROM tasks)")
        let target = try store.publish("class_4") { edit in
            edit.json = .object(JSONObject((edit.json.objectValue?.members ?? []).map { member in
                member.key == "tables" ? JSONMember("tables", .array((member.value.arrayValue ?? []).filter {
                    $0.objectValue?["table_id"] != .string("tbl_tasks")
                })) : member
            }))
        }
        #expect(throws: SyncCycleError.self) { try store.cycle() }
        let blocking = try store.fixture.storeFixture.inspect { connection in
            try connection.rows("SELECT code, retryable, recovery_action FROM _synchro_blocking_error")
        }
        #expect(blocking == [[.text("incompatible_schema_transition"), .integer(0), .text("schema_reset")]])
        // Stored, not re-asked: the next run sends nothing and fails the same way.
        store.transport.reset()
        #expect(throws: SyncCycleError.self) { try store.cycle() }
        #expect(store.transport.paths.isEmpty)
        #expect(try store.fixture.count("SELECT count(*) FROM _synchro_pending_changes WHERE lifecycle_state = 'unsealed'")
            == 3)

        _ = try CycleRecorder().cycle(store.context).runSchemaReset()
        try store.cycle()
        #expect(try store.fixture.count("SELECT count(*) FROM _synchro_blocking_error") == 0)
        #expect(try store.fixture.count("SELECT count(*) FROM sqlite_schema WHERE name = 'tasks'") == 0)
        #expect(try store.fixture.count("""
            SELECT count(*) FROM _synchro_rejected_mutations WHERE table_name = 'tasks' AND code = 'schema_incompatible'
            """) == 1)
        try store.expectConverged(on: target, retainedRejections: [
            try store.fixture.storeFixture.inspect { connection in
                try connection.scalar("SELECT record_id FROM _synchro_pending_changes WHERE table_name = 'tasks'")?
                    .textValue ?? ""
            },
        ])
    }
}
