import Foundation
import SQLiteKit
import SynchroClient
import SynchroProtocol
import Testing
import _SeedkitTestSupport
import SynchroStore

@Suite("Schema application")
struct SchemaApplicationTests {
    @Test("the demo manifest creates its tables with the declared types in manifest field order", arguments: [
        ("categories", [("id", "INTEGER", false, 1), ("name", "TEXT", true, 0)]),
        ("products", [
            ("id", "INTEGER", false, 1), ("sku", "TEXT", true, 0), ("title", "TEXT", true, 0),
            ("price", "TEXT", true, 0), ("stock", "INTEGER", true, 0), ("rating", "REAL", false, 0),
            ("active", "INTEGER", true, 0), ("release_date", "TEXT", false, 0), ("attrs", "TEXT", false, 0),
            ("thumb", "BLOB", false, 0), ("category_id", "INTEGER", true, 0), ("updated_at", "TEXT", true, 0),
        ]),
        ("tasks", [
            ("id", "TEXT", false, 1), ("owner_id", "TEXT", true, 0), ("title", "TEXT", true, 0),
            ("done", "INTEGER", true, 0), ("due_date", "TEXT", false, 0), ("position", "INTEGER", true, 0),
        ]),
    ])
    func tables(table: String, expected: [(String, String, Bool, Int)]) throws {
        let fixture = try StoreFixture()
        let columns = try fixture.inspect { try $0.columns(of: table) }
        #expect(columns.map(\.name) == expected.map(\.0))
        #expect(columns.map(\.declaredType) == expected.map(\.1))
        #expect(columns.map(\.isNotNull) == expected.map(\.2))
        #expect(columns.map(\.primaryKeyPosition) == expected.map(\.3))
        #expect(columns.allSatisfy { $0.defaultSQL == nil })
    }

    @Test("the table DDL is CREATE TABLE IF NOT EXISTS with column constraints only")
    func tableDDL() throws {
        let fixture = try StoreFixture()
        let sql = try fixture.inspect {
            try $0.scalar("SELECT sql FROM sqlite_schema WHERE name = 'categories'")?.textValue
        }
        #expect(sql == "CREATE TABLE \"categories\" (\"id\" INTEGER PRIMARY KEY, \"name\" TEXT NOT NULL)")
    }

    @Test("manifest indexes are created with their columns in index order")
    func indexes() throws {
        let fixture = try StoreFixture()
        let indexes = try fixture.inspect { db in
            try db.query("""
                SELECT name, tbl_name, sql FROM sqlite_schema
                WHERE type = 'index' AND tbl_name IN ('products', 'notes', 'tasks') AND sql IS NOT NULL ORDER BY name
                """) { "\(try $0.text(at: 0)) \(try $0.text(at: 1)): \(try $0.text(at: 2))" }
        }
        #expect(indexes == [
            #"notes_owner_updated notes: CREATE INDEX "notes_owner_updated" ON "notes" ("owner_id", "updated_at")"#,
            #"products_category products: CREATE INDEX "products_category" ON "products" ("category_id", "title")"#,
            #"products_sku products: CREATE UNIQUE INDEX "products_sku" ON "products" ("sku")"#,
            #"tasks_owner_position tasks: CREATE INDEX "tasks_owner_position" ON "tasks" ("owner_id", "position")"#,
        ])
    }

    @Test("three capture triggers per synced table; the delete trigger is BEFORE for soft-delete tables")
    func triggers() throws {
        let fixture = try StoreFixture()
        let triggers = try fixture.inspect { db in
            try db.query("SELECT name, tbl_name, sql FROM sqlite_schema WHERE type = 'trigger' ORDER BY name") {
                (try $0.text(at: 0), try $0.text(at: 1), try $0.text(at: 2))
            }
        }
        let expected = ["categories", "notes", "products", "tasks"].flatMap { table in
            ["delete", "insert", "update"].map { "_synchro_cdc_\($0)_\(table)" }
        }
        #expect(triggers.map(\.0) == expected.sorted())
        for (name, table, sql) in triggers {
            #expect(name.hasSuffix(table))
            #expect(sql.contains("WHEN (SELECT value FROM _synchro_meta WHERE key = 'sync_lock') = '0'"))
            #expect(!sql.uppercased().contains("ON CONFLICT"), "no UPSERT in \(name)")
        }
        let notesDelete = try #require(triggers.first { $0.0 == "_synchro_cdc_delete_notes" })
        #expect(notesDelete.2.contains("BEFORE DELETE ON \"notes\""))
        #expect(notesDelete.2.contains("RAISE(IGNORE)"))
        let tasksDelete = try #require(triggers.first { $0.0 == "_synchro_cdc_delete_tasks" })
        #expect(tasksDelete.2.contains("AFTER DELETE ON \"tasks\""))
    }

    @Test("activation writes the schema reference, the local schema, the manifest and one archive row")
    func metadata() throws {
        let fixture = try StoreFixture()
        let manifest = try demoManifest()
        #expect(try fixture.store.meta(.schemaVersion) == "1")
        #expect(try fixture.store.meta(.schemaHash) == manifest.reference.hash)
        #expect(try fixture.store.meta(.schemaManifest) == (try CanonicalJSON.string(manifest.json)))
        #expect(try fixture.store.meta(.syncLock) == "0")
        #expect(try fixture.store.localSchema() == manifest.localSchema)
        let archive = try fixture.inspect {
            try $0.rows("SELECT schema_version, schema_hash, schema_json, created_at FROM _synchro_schema_archive")
        }
        #expect(archive.count == 1)
        #expect(archive.first?[0] == .integer(1))
        #expect(archive.first?[1] == .text(manifest.reference.hash))
        #expect(archive.first?[2] == (try fixture.store.meta(.localSchema)).map(SQLiteValue.text))
        #expect(archive.first?[3] == .text("2023-11-14T22:13:20.123000Z"))
    }

    @Test("the local schema JSON uses the Swift member names, in manifest order, with explicit nulls")
    func localSchemaJSON() throws {
        let fixture = try StoreFixture()
        let text = try #require(try fixture.store.meta(.localSchema))
        let json = try StrictJSONParser().parse(text)
        let tables = try #require(json.arrayValue)
        let names = tables.compactMap { $0.objectValue?["tableName"]?.stringValue }
        #expect(names == ["categories", "products", "notes", "tasks"])
        let notes = try #require(tables[2].objectValue)
        #expect(notes.keys == ["tableID", "relationID", "tableName", "primaryKeyFieldID", "createdAtFieldID",
                               "updatedAtFieldID", "deletedAtFieldID", "updatedAtColumn", "deletedAtColumn",
                               "composition", "primaryKey", "columns", "indexes"])
        #expect(notes["createdAtFieldID"] == .null)
        #expect(notes["deletedAtColumn"] == .string("deleted_at"))
        #expect(notes["updatedAtColumn"] == .string("updated_at"))
        #expect(notes["primaryKey"] == .array([.string("id")]))
        let firstColumn = try #require(notes["columns"]?.arrayValue?.first?.objectValue)
        #expect(firstColumn.keys == ["fieldID", "name", "logicalType", "nullable", "writable", "precision", "scale",
                                     "sqliteDefaultSQL", "isPrimaryKey"])
        #expect(firstColumn["isPrimaryKey"] == .bool(true))
        let index = try #require(notes["indexes"]?.arrayValue?.first?.objectValue)
        #expect(index.keys == ["indexID", "name", "fieldIDs", "unique"])
    }

    @Test("applying the active manifest again changes nothing observable")
    func reapply() throws {
        let fixture = try StoreFixture()
        let before = try fixture.inspect(databaseFingerprint)
        #expect(try fixture.store.applySchema(try demoManifest()) == .alreadyActive)
        #expect(try fixture.inspect(databaseFingerprint) == before)
    }

    @Test("local-only tables are never touched, before and after schema application")
    func localTablesUntouched() throws {
        let fixture = try StoreFixture(applyDemo: false)
        try fixture.store.execute("CREATE TABLE drafts (id INTEGER PRIMARY KEY, body TEXT)")
        try fixture.store.execute("INSERT INTO drafts (body) VALUES ('kept')")
        try fixture.store.applySchema(try demoManifest())
        let drafts = try fixture.inspect { db in
            (try db.scalar("SELECT sql FROM sqlite_schema WHERE name = 'drafts'")?.textValue,
             try db.rows("SELECT body FROM drafts"),
             try db.scalar("SELECT count(*) FROM sqlite_schema WHERE tbl_name = 'drafts' AND type = 'trigger'"))
        }
        #expect(drafts.0 == "CREATE TABLE drafts (id INTEGER PRIMARY KEY, body TEXT)")
        #expect(drafts.1 == [[.text("kept")]])
        #expect(drafts.2 == .integer(0))
        try fixture.store.execute("INSERT INTO drafts (body) VALUES ('local')")
        #expect(try fixture.store.ledger().isEmpty)
    }

    @Test("a local table holding a synced table's name with another layout is a conflict and nothing changes")
    func tableConflict() throws {
        let fixture = try StoreFixture(applyDemo: false)
        try fixture.store.execute("CREATE TABLE tasks (id TEXT PRIMARY KEY, note TEXT)")
        let before = try fixture.inspect(databaseFingerprint)
        let error = try #require(throws: ClientStoreError.self) { try fixture.store.applySchema(try demoManifest()) }
        #expect(error == .schemaApplication(.tableConflict("tasks")))
        #expect(try fixture.inspect(databaseFingerprint) == before)
    }

    @Test("a different manifest is refused while one is active")
    func differentSchema() throws {
        let fixture = try StoreFixture()
        let manifest = try demoManifest()
        let other = try otherManifest()
        let error = try #require(throws: ClientStoreError.self) { try fixture.store.applySchema(other) }
        #expect(error == .schemaApplication(.differentSchemaActive(version: 1, hash: manifest.reference.hash)))
    }

    @Test("a manifest whose hash does not match is refused before anything is created")
    func hashMismatch() throws {
        let url = RepositoryLayout.root.appendingPathComponent("seeds/demo/manifest.json")
        var text = try String(contentsOf: url, encoding: .utf8)
        text = text.replacingOccurrences(of: "\"name\": \"tasks\"", with: "\"name\": \"todo\"")
        #expect(throws: SchemaApplicationError.self) { try ClientManifest(bytes: Array(text.utf8)) }
    }

    @Test("a synced table name in the reserved namespace is refused")
    func reservedName() throws {
        let json = manifestJSON(tableName: "_synchro_evil")
        let error = try #require(throws: SchemaApplicationError.self) { try ClientManifest(json: json) }
        #expect(error == .reservedTableName("_synchro_evil"))
    }
}

/// A one-table manifest (`items`: a `keyType` key, one nullable writable text field) with a correct hash.
func manifestJSON(tableName: String = "items", version: Int64 = 2, keyType: String = "string") -> JSONValue {
    let body: JSONValue = .object(JSONObject([
        JSONMember("schema_version", .number(JSONNumber(version))),
        JSONMember("parent_schema", .null),
        JSONMember("transition_class", .string("initial")),
        JSONMember("compatibility_floor", .number(JSONNumber(1))),
        JSONMember("tables", .array([.object(JSONObject([
            JSONMember("table_id", .string("tbl_items")), JSONMember("relation_id", .string("rel_items")),
            JSONMember("name", .string(tableName)), JSONMember("composition", .string("single_scope")),
            JSONMember("primary_key_field_id", .string("fld_id")),
            JSONMember("lifecycle", .object(JSONObject([
                JSONMember("created_at_field_id", .null), JSONMember("updated_at_field_id", .null),
                JSONMember("deleted_at_field_id", .null),
            ]))),
            JSONMember("fields", .array([
                .object(JSONObject([
                    JSONMember("field_id", .string("fld_id")), JSONMember("name", .string("id")),
                    JSONMember("type", .string(keyType)), JSONMember("nullable", .bool(false)),
                    JSONMember("writable", .bool(false)),
                ])),
                .object(JSONObject([
                    JSONMember("field_id", .string("fld_body")), JSONMember("name", .string("body")),
                    JSONMember("type", .string("string")), JSONMember("nullable", .bool(true)),
                    JSONMember("writable", .bool(true)),
                ])),
            ])),
            JSONMember("indexes", .array([])),
        ]))])),
    ]))
    let hash = (try? SchemaManifest.computeHash(json: body)) ?? ""
    guard case .object(let object) = body else { return body }
    return .object(JSONObject(object.members + [JSONMember("schema_hash", .string(hash))]))
}

func otherManifest(keyType: String = "string") throws -> ClientManifest {
    try ClientManifest(json: manifestJSON(keyType: keyType))
}
