import Foundation
import SQLiteKit
import SynchroClient
import SynchroProtocol
import Testing
import _SeedkitTestSupport
import SynchroStore

@Suite("Interchange seed migration")
struct SeedMigrationTests {
    /// A seed file written per `spec/seed-format.md` §2 and a store opened on it.
    final class SeedFixture {
        let directory: TemporaryDirectory
        let path: String
        let seed: InterchangeSeed
        let store: ClientStore

        init(legacyQueueRow: Bool = false) throws {
            directory = try TemporaryDirectory(prefix: "synchro-seed")
            path = directory.path("seed.db")
            seed = try InterchangeSeed.demo()
            try seed.write(to: path, legacyQueueRow: legacyQueueRow)
            store = try ClientStore(configuration: StoreFixture.configuration(
                path: path, clientID: "ios-device-9", uuids: SequentialUUIDs()))
        }

        func inspect<Result>(_ body: (Connection) throws -> Result) throws -> Result {
            let connection = try Connection(path: path, mode: .readWrite)
            defer { connection.close() }
            return try body(connection)
        }

        deinit {
            store.close()
        }
    }

    @Test("the interchange baseline is detected and migrated forward through the ten remaining steps")
    func detectsBaseline() throws {
        let fixture = try SeedFixture()
        #expect(fixture.store.openedLayout.kind == .interchangeBaseline)
        #expect(fixture.store.openedLayout.userVersion == 6)
        #expect(fixture.store.openedLayout.pendingMigrations.first == .v9MutationLedger)
        #expect(fixture.store.openedLayout.pendingMigrations.count == 11)
        let recorded = try fixture.inspect {
            try $0.query("SELECT identifier FROM grdb_migrations") { try $0.text(at: 0) }
        }
        #expect(Set(recorded) == Set(StoreMigration.allCases.map(\.identifier)))
        #expect(try fixture.inspect { try $0.userVersion() } == 6)
    }

    @Test("after migration the Synchro tables and columns equal a new file's")
    func layoutEqualsFresh() throws {
        let fixture = try SeedFixture()
        try fixture.inspect { db in
            for (table, columns) in StoreMigrationTests.freshTables {
                #expect(try db.columns(of: table).map(\.name) == columns, "columns of \(table)")
            }
            let synchroIndexes = try db.query("""
                SELECT name FROM sqlite_schema WHERE type = 'index' AND sql IS NOT NULL AND name LIKE 'idx_synchro%'
                ORDER BY name
                """) { try $0.text(at: 0) }
            #expect(synchroIndexes == StoreMigrationTests.freshIndexes.map(\.0))
            #expect(try db.tableExists("_synchro_bucket_members") == false)
        }
    }

    @Test("scope state, provenance, row versions, receipts and seed metadata survive the migration")
    func stateSurvives() throws {
        let fixture = try SeedFixture()
        try fixture.inspect { db in
            let scopes = try db.rows("""
                SELECT scope_id, cursor, generation, checksum = local_checksum FROM _synchro_scopes ORDER BY scope_id
                """)
            #expect(scopes == [["catalog", .null, 0, 1], ["shared-tasks", .null, 0, 1]])
            #expect(try db.scalar("SELECT count(*) FROM _synchro_scope_rows") == .integer(3))
            #expect(try db.scalar("SELECT typeof(checksum) FROM _synchro_scope_rows LIMIT 1") == .text("text"))
            #expect(try db.scalar("SELECT count(*) FROM _synchro_row_versions") == .integer(3))
            #expect(try db.scalar("SELECT count(*) FROM _synchro_seed_receipts") == .integer(2))
            #expect(try db.scalar("SELECT count(*) FROM _synchro_pending_changes") == .integer(0))
        }
        #expect(try fixture.store.meta(.snapshotComplete) == "1")
        #expect(try fixture.store.meta(.localSchema) == fixture.seed.exporterLocalSchema)
        #expect(try fixture.store.meta(.schemaVersion) == "1")
        #expect(try fixture.store.localSchema().map(\.tableName) == ["categories", "products", "notes", "tasks"])
        #expect(try fixture.store.localSchema().allSatisfy { $0.indexes.isEmpty })
    }

    @Test("the ledger step archives the stored schema and replaces the legacy triggers with current ones")
    func triggersAndArchive() throws {
        let fixture = try SeedFixture()
        let reference = fixture.seed.manifest.reference
        let archive = try fixture.inspect {
            try $0.rows("SELECT schema_version, schema_hash FROM _synchro_schema_archive")
        }
        #expect(archive == [[.integer(reference.version), .text(reference.hash)]])
        let fresh = try StoreFixture()
        let triggerSQL = { (db: Connection) in
            try db.query("SELECT name, sql FROM sqlite_schema WHERE type = 'trigger' ORDER BY name") {
                "\(try $0.text(at: 0)): \(try $0.text(at: 1))"
            }
        }
        let seeded = try fixture.inspect(triggerSQL)
        #expect(seeded.count == 12)
        #expect(seeded == (try fresh.inspect(triggerSQL)))
    }

    @Test("offline writes on a migrated seed are captured against the seeded server versions")
    func capturesOffline() throws {
        let fixture = try SeedFixture()
        try fixture.store.execute("UPDATE tasks SET title = 'Offline' WHERE id = 't1'")
        try fixture.store.execute("INSERT INTO categories (id, name) VALUES (3, 'Music')")
        let ledger = try fixture.store.ledger()
        #expect(ledger.map(\.operation) == [.update, .insert])
        #expect(ledger.first?.baseVersion == "v12")
        #expect(ledger.first?.binding?.authoredSchema == fixture.seed.manifest.reference)
        #expect(ledger.first?.fields.map(\.fieldID) == ["fld_task_title"])
    }

    @Test("applying the seed's own manifest afterwards creates the manifest indexes the exporter left out")
    func indexesOnNextApplication() throws {
        let fixture = try SeedFixture()
        #expect(try fixture.store.applySchema(fixture.seed.manifest) == .alreadyActive)
        let indexes = try fixture.inspect {
            try $0.query("""
                SELECT name FROM sqlite_schema
                WHERE type = 'index' AND tbl_name = 'products' AND sql IS NOT NULL ORDER BY name
                """) { try $0.text(at: 0) }
        }
        #expect(indexes == ["products_category", "products_sku"])
    }

    @Test("a legacy queue row becomes a legacy_blocked ledger entry with a deterministic version-5 ID")
    func legacyImport() throws {
        let fixture = try SeedFixture(legacyQueueRow: true)
        let entry = try #require(try fixture.store.ledger().first)
        #expect(entry.state == .legacyBlocked)
        #expect(entry.sourceKind == .legacyImport)
        #expect(entry.binding == nil)
        #expect(entry.operation == .update)
        #expect(entry.baseVersion == "v12")
        #expect(entry.captureUUID == entry.mutationID)
        #expect(WireFormats.isCanonicalUUID(entry.mutationID))
        #expect(Array(entry.mutationID)[14] == "5")
        #expect("89ab".contains(Array(entry.mutationID)[19]))
        // The same legacy row always imports under the same ID.
        let again = try SeedFixture(legacyQueueRow: true)
        #expect(try again.store.ledger().first?.mutationID == entry.mutationID)
        // A later write to that row depends on the blocked import, and normalization blocks it too.
        try fixture.store.execute("UPDATE tasks SET title = 'After' WHERE id = 't1'")
        try fixture.store.normalizePendingMutations()
        #expect(try fixture.store.ledger().map(\.state) == [.legacyBlocked, .unsealed])
    }
}
