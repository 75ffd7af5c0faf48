import Foundation
import SQLiteKit
import SynchroClient
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// A manifest index is created only under a name no other index holds, and dropped only when a manifest created it
/// (issue #19): `CREATE INDEX IF NOT EXISTS` used to skip an application's index of that name, and the next version
/// without the index then dropped the application's. Real files migrated by a loopback server's schema actions.
@Suite("Manifest index ownership")
struct IndexOwnershipTests {
    let store: EvolvingStore

    init() throws {
        store = try EvolvingStore()
    }

    static func index(_ id: String, _ name: String, _ field: String) -> JSONValue {
        .object(JSONObject([
            JSONMember("index_id", .string(id)), JSONMember("name", .string(name)),
            JSONMember("field_ids", .array([.string(field)])), JSONMember("unique", .bool(false)),
        ]))
    }

    /// `(name, table)` of every index with a statement (no automatic ones), by name.
    func indexes() throws -> [String: String] {
        try store.fixture.storeFixture.inspect { connection in
            Dictionary(uniqueKeysWithValues: try connection.query(
                "SELECT name, tbl_name FROM sqlite_schema WHERE type = 'index' AND sql IS NOT NULL") {
                (try $0.text(at: 0), try $0.text(at: 1))
            })
        }
    }

    func record() throws -> String? {
        try store.fixture.storeFixture.inspect { connection in
            try connection.scalar("SELECT value FROM _synchro_meta WHERE key = 'seedkit_manifest_indexes'")?.textValue
        }
    }

    @Test("the application's index under a name the next manifest declares: refused, never adopted, never dropped")
    func applicationIndexNameRefused() throws {
        #expect(try record() == #"["notes_owner_updated","products_category","products_sku","tasks_owner_position"]"#)
        try store.fixture.storeFixture.inspect { try $0.execute("CREATE INDEX drafts_body ON local_drafts (body)") }
        let before = try store.activeReference()
        _ = try store.publish("class_2") { edit in
            edit.setTable("tbl_notes", "indexes", .array(
                edit.indexes("tbl_notes") + [Self.index("idx_notes_body", "drafts_body", "fld_note_body")]))
        }

        let error = try #require(throws: (any Error).self) { try store.cycle() }

        #expect(String(describing: error).contains("drafts_body"), "\(error)")
        #expect(try store.activeReference() == before)
        #expect(try indexes()["drafts_body"] == "local_drafts")
        #expect(try record() == #"["notes_owner_updated","products_category","products_sku","tasks_owner_position"]"#)
    }

    @Test("a store without the record: a removed manifest index is dropped only when it is exactly the manifest's")
    func storeWrittenBeforeTheRecord() throws {
        try store.fixture.storeFixture.inspect { connection in
            try connection.execute("DELETE FROM _synchro_meta WHERE key = 'seedkit_manifest_indexes'")
            // What the old creation left when the application already had an index of that name: the application's.
            try connection.execute("DROP INDEX notes_owner_updated")
            try connection.execute("CREATE INDEX notes_owner_updated ON local_drafts (body)")
        }
        let target = try store.publish("class_2") { edit in
            edit.setTable("tbl_notes", "indexes", .array([]))
            edit.setTable("tbl_tasks", "indexes", .array([]))
        }

        try store.cycle()

        #expect(try store.activeReference() == target)
        let indexes = try indexes()
        #expect(indexes["notes_owner_updated"] == "local_drafts", "the application's index was dropped")
        #expect(indexes["tasks_owner_position"] == nil, "the manifest's own index was kept")
        #expect(indexes["products_sku"] == "products")
    }
}
