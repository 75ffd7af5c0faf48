import Foundation
import SQLiteKit
import SynchroProtocol
import SynchroStore
import Testing
import _SeedkitTestSupport

/// `StoreFile` is the one way a file is opened in the client layout: the engine and the seed installer both go
/// through it, so these tests hold the two descriptions of the layout (the seed baseline the writer declares and
/// the migration steps the engine runs) to one result.
@Suite("SynchroStore: opening a file in the client layout")
struct StoreFileTests {
    @Test("a file holding exactly the seed baseline is the interchange baseline and migrates to a new file's layout")
    func baselineMigratesToTheNewLayout() throws {
        let directory = try TemporaryDirectory(prefix: "synchro-store")
        let seed = directory.path("baseline.db")
        try Self.writeBaseline(at: seed)

        let opened = try StoreFile.open(path: seed, clock: .system)
        #expect(opened.layout.kind == .interchangeBaseline)
        #expect(opened.layout.appliedMigrations.map(\.rawValue) == SeedBaseline.migrationIdentifiers)
        opened.connection.close()
        #expect(try StoreFile.migrate(path: seed).kind == .current)

        let fresh = directory.path("fresh.db")
        #expect(try StoreFile.migrate(path: fresh).kind == .empty)
        #expect(try Self.internalLayout(seed) == Self.internalLayout(fresh))
    }

    @Test("migrating closes the file as the engine does: no -wal or -shm left beside it")
    func migrateLeavesNoSidecar() throws {
        let directory = try TemporaryDirectory(prefix: "synchro-store")
        let path = directory.path("store.db")
        _ = try StoreFile.migrate(path: path)
        for suffix in ["-wal", "-shm", "-journal"] {
            #expect(!FileManager.default.fileExists(atPath: path + suffix), "\(suffix) left behind")
        }
    }

    @Test("a file recording a step this release does not know is a newer layout, refused without a change")
    func newerLayoutIsRefusedUntouched() throws {
        let directory = try TemporaryDirectory(prefix: "synchro-store")
        let path = directory.path("store.db")
        _ = try StoreFile.migrate(path: path)
        let connection = try Connection(path: path)
        try connection.run("INSERT INTO grdb_migrations VALUES ('synchro_v99_future')")
        connection.close()
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        let error = try #require(throws: ClientStoreError.self) { try StoreFile.open(path: path, clock: .system) }
        #expect(error == .newerLayout(unknownMigrations: ["synchro_v99_future"]))
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
    }

    /// Writes the baseline tables, indexes, migration identifiers, meta rows and user version a seed carries.
    static func writeBaseline(at path: String) throws {
        let connection = try Connection(path: path)
        defer { connection.close() }
        for table in SeedBaseline.tables {
            try connection.execute(table.createSQL)
            for index in table.indexes { try connection.execute(index.sql) }
        }
        for identifier in SeedBaseline.migrationIdentifiers {
            try connection.run("INSERT INTO grdb_migrations (identifier) VALUES (?)", [.text(identifier)])
        }
        for key in [MetaKey.syncLock, .checkpoint] {
            try connection.run("INSERT INTO _synchro_meta (key, value) VALUES (?, '0')", [.text(key.rawValue)])
        }
        try connection.execute("PRAGMA user_version = \(SeedBaseline.userVersion)")
    }

    /// Every internal table with its columns as `PRAGMA table_info` reports them, and every named index.
    static func internalLayout(_ path: String) throws -> [String] {
        let connection = try Connection(path: path, mode: .readOnly)
        defer { connection.close() }
        let tables = try connection.query(
            "SELECT name FROM sqlite_schema WHERE type = 'table' AND (name LIKE '\\_synchro\\_%' ESCAPE '\\' "
                + "OR name = 'grdb_migrations') ORDER BY name") { try $0.text(at: 0) }
        var layout: [String] = []
        for table in tables {
            for column in try connection.columns(of: table) {
                layout.append("\(table).\(column.name) \(column.declaredType) \(column.isNotNull) \(column.defaultSQL ?? "-") \(column.primaryKeyPosition)")
            }
        }
        layout += try connection.query(
            "SELECT name || ' ' || tbl_name FROM sqlite_schema WHERE type = 'index' AND sql IS NOT NULL ORDER BY name"
        ) { try $0.text(at: 0) }
        return layout
    }
}

/// Names a server may not give (issue #19): the manifest-derived local schema refuses them before any DDL.
@Suite("SynchroStore: server-provided names")
struct ServerNameTests {
    /// A one-table manifest whose table is `tableName` with one index `indexName` (and optionally a second table
    /// named `otherTable`), with a correct hash.
    static func manifest(tableName: String = "items", indexName: String, otherTable: String? = nil) -> JSONValue {
        func table(_ id: String, _ name: String, indexes: [JSONValue]) -> JSONValue {
            .object(JSONObject([
                JSONMember("table_id", .string(id)), JSONMember("relation_id", .string("rel_" + id)),
                JSONMember("name", .string(name)), JSONMember("composition", .string("single_scope")),
                JSONMember("primary_key_field_id", .string("fld_id")),
                JSONMember("lifecycle", .object(JSONObject([
                    JSONMember("created_at_field_id", .null), JSONMember("updated_at_field_id", .null),
                    JSONMember("deleted_at_field_id", .null),
                ]))),
                JSONMember("fields", .array([
                    .object(JSONObject([
                        JSONMember("field_id", .string("fld_id")), JSONMember("name", .string("id")),
                        JSONMember("type", .string("string")), JSONMember("nullable", .bool(false)),
                        JSONMember("writable", .bool(false)),
                    ])),
                    .object(JSONObject([
                        JSONMember("field_id", .string("fld_body")), JSONMember("name", .string("body")),
                        JSONMember("type", .string("string")), JSONMember("nullable", .bool(true)),
                        JSONMember("writable", .bool(true)),
                    ])),
                ])),
                JSONMember("indexes", .array(indexes)),
            ]))
        }
        let index: JSONValue = .object(JSONObject([
            JSONMember("index_id", .string("idx_1")), JSONMember("name", .string(indexName)),
            JSONMember("field_ids", .array([.string("fld_body")])), JSONMember("unique", .bool(false)),
        ]))
        var tables = [table("tbl_items", tableName, indexes: [index])]
        if let otherTable { tables.append(table("tbl_other", otherTable, indexes: [])) }
        let body: JSONValue = .object(JSONObject([
            JSONMember("schema_version", .number(JSONNumber(2))), JSONMember("parent_schema", .null),
            JSONMember("transition_class", .string("initial")),
            JSONMember("compatibility_floor", .number(JSONNumber(1))), JSONMember("tables", .array(tables)),
        ]))
        let hash = (try? SchemaManifest.computeHash(json: body)) ?? ""
        guard case .object(let object) = body else { return body }
        return .object(JSONObject(object.members + [JSONMember("schema_hash", .string(hash))]))
    }

    @Test("an index named like a client index, or in a reserved namespace, is refused", arguments: [
        "idx_synchro_scope_rows_record", "IDX_SYNCHRO_PENDING_CHANGES_BATCH", "_synchro_evil", "sqlite_autoindex_x",
    ])
    func reservedIndexNames(name: String) throws {
        let error = try #require(throws: SchemaApplicationError.self) {
            try ClientManifest(json: Self.manifest(indexName: name))
        }
        #expect(error == .reservedIndexName(table: "items", index: name))
    }

    @Test("an index with a table's name is refused; an ordinary name and a synchro-like app name are accepted")
    func collisionsAndOrdinaryNames() throws {
        let error = try #require(throws: SchemaApplicationError.self) {
            try ClientManifest(json: Self.manifest(indexName: "Other", otherTable: "other"))
        }
        #expect(error == .duplicateIndexName(table: "items", index: "Other"))
        #expect(try ClientManifest(json: Self.manifest(indexName: "idx_items_body")).localSchema.count == 1)
        #expect(try ClientManifest(json: Self.manifest(indexName: "idx_synchro_settings_body")).localSchema.count == 1)
    }

    @Test("a table named like a client index is refused")
    func tableNamedLikeAnIndex() throws {
        let error = try #require(throws: SchemaApplicationError.self) {
            try ClientManifest(json: Self.manifest(tableName: "idx_synchro_scope_rows_record", indexName: "i"))
        }
        #expect(error == .reservedTableName("idx_synchro_scope_rows_record"))
    }
}
