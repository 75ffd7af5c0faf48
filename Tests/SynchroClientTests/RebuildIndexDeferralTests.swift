import SQLiteKit
import SynchroClient
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// The initial rebuild of a fresh store builds the manifest's non-unique indexes once, at finality
/// (`docs/decisions.md`, "Initial rebuild: non-unique manifest indexes built once at finality").
@Suite("Rebuild: non-unique indexes deferred on a fresh store")
struct RebuildIndexDeferralTests {
    /// `name: sql` of every index on the synced tables (auto-indexes have no SQL and are left out).
    static func indexes(_ fixture: SyncFixture) throws -> [String] {
        try fixture.storeFixture.inspect { connection in
            try connection.query("""
                SELECT name, sql FROM sqlite_schema
                WHERE type = 'index' AND sql IS NOT NULL AND tbl_name IN ('categories', 'notes', 'products', 'tasks')
                ORDER BY name
                """) { "\(try $0.text(at: 0)): \(try $0.text(at: 1))" }
        }
    }

    static func deferredRecord(_ fixture: SyncFixture) throws -> String? {
        try fixture.storeFixture.inspect { connection in
            try connection.scalar("SELECT value FROM _synchro_meta WHERE key = 'seedkit_deferred_indexes'")?.textValue
        }
    }

    static let category = #"products_category: CREATE INDEX "products_category" ON "products" ("category_id", "title")"#
    static let sku = #"products_sku: CREATE UNIQUE INDEX "products_sku" ON "products" ("sku")"#

    @Test("""
        between pages of a fresh store's first rebuild the non-unique indexes are absent and recorded; finality \
        builds them with their exact SQL
        """)
    func deferredThenBuiltAtFinality() throws {
        let fixture = try SyncFixture()
        try fixture.connect()
        let declared = try Self.indexes(fixture)
        #expect(declared.contains(Self.category) && declared.contains(Self.sku))
        #expect(try Self.deferredRecord(fixture) == nil)

        let applier = RebuildApplier(context: fixture.context)
        try applier.start(scope: "catalog")
        #expect(try applier.runPage(scope: "catalog") == false)
        let midway = try Self.indexes(fixture)
        #expect(!midway.contains(Self.category))
        #expect(midway.contains(Self.sku), "a unique index is never deferred")
        let record = try #require(try Self.deferredRecord(fixture))
        let names = try StrictJSONParser().parse(Array(record.utf8)).arrayValue?
            .compactMap { $0.objectValue?["name"]?.stringValue }
        #expect(names == ["notes_owner_updated", "products_category", "tasks_owner_position"])
        #expect(record.contains(
            #""sql":"CREATE INDEX \"products_category\" ON \"products\" (\"category_id\", \"title\")""#))

        // Another page keeps them deferred; finality builds them in its own transaction.
        #expect(try applier.runPage(scope: "catalog") == false)
        #expect(!(try Self.indexes(fixture)).contains(Self.category))
        while try !applier.runPage(scope: "catalog") {}
        #expect(try Self.indexes(fixture) == declared)
        #expect(try Self.deferredRecord(fixture) == nil)
        #expect(try fixture.storeFixture.inspect { try $0.scalar("PRAGMA integrity_check")?.textValue } == "ok")

        // The second scope's store is no longer fresh for products; its other tables are empty and deferred again.
        try RebuildApplier(context: fixture.context).rebuild(scope: "user:alice")
        #expect(try Self.indexes(fixture) == declared)
        #expect(try Self.deferredRecord(fixture) == nil)
        let outcome = try PullApplier(context: fixture.context).pull()
        #expect(outcome.verifiedScopes == ["catalog", "user:alice"])
        #expect(outcome.rebuildRequired.isEmpty)
    }

    @Test("reopening the store after the indexes were deferred builds them first; the rebuild resumes and verifies")
    func reopenRestores() throws {
        let fixture = try SyncFixture()
        try fixture.connect()
        let declared = try Self.indexes(fixture)
        let applier = RebuildApplier(context: fixture.context)
        try applier.start(scope: "catalog")
        #expect(try applier.runPage(scope: "catalog") == false)
        #expect(try Self.deferredRecord(fixture) != nil)

        try fixture.storeFixture.reopen()
        #expect(try Self.indexes(fixture) == declared)
        #expect(try Self.deferredRecord(fixture) == nil)
        let resumed = RebuildApplier(context: fixture.context)
        #expect(try resumed.attempt(scope: "catalog")?.cursor != nil)
        try resumed.rebuild(scope: "catalog")
        #expect(try Self.indexes(fixture) == declared, "a resumed attempt does not defer again")
        #expect(try fixture.scopes().first { $0.id == "catalog" }?.checksum != nil)
    }

    @Test("a sync cycle builds indexes a rebuild left deferred before anything else, and ends with them built")
    func cycleRestores() throws {
        let fixture = try SyncFixture()
        try fixture.connect()
        let declared = try Self.indexes(fixture)
        let applier = RebuildApplier(context: fixture.context)
        try applier.start(scope: "catalog")
        #expect(try applier.runPage(scope: "catalog") == false)
        #expect(!(try Self.indexes(fixture)).contains(Self.category))

        let cycle = SyncCycle(context: fixture.context, delay: { _ in })
        let summary = try cycle.run()
        #expect(summary.scopesRebuilt == ["catalog", "user:alice"])
        #expect(try Self.indexes(fixture) == declared)
        #expect(try Self.deferredRecord(fixture) == nil)
    }

    @Test("a unique index still refuses a duplicate while the non-unique ones are deferred")
    func uniqueStillRaises() throws {
        let fixture = try SyncFixture()
        try fixture.connect()
        let applier = RebuildApplier(context: fixture.context)
        try applier.start(scope: "catalog")
        #expect(try applier.runPage(scope: "catalog") == false)
        #expect(try Self.deferredRecord(fixture) != nil)
        let duplicate =
            "UPDATE products SET sku = (SELECT min(sku) FROM products) WHERE id = (SELECT max(id) FROM products)"
        #expect(throws: ApplicationSQLError.self) { try fixture.store.execute(duplicate) }
        #expect(try fixture.count("SELECT count(*) FROM _synchro_pending_changes") == 0)
        #expect(try fixture.count("SELECT count(DISTINCT sku) FROM products")
            == fixture.count("SELECT count(*) FROM products"))
        try applier.rebuild(scope: "catalog")
        #expect(throws: ApplicationSQLError.self) { try fixture.store.execute(duplicate) }
    }

    @Test("a store with an authored change keeps every index through its first rebuild")
    func authoredStoreKeepsIndexes() throws {
        let fixture = try SyncFixture()
        try fixture.connect()
        let declared = try Self.indexes(fixture)
        try fixture.store.execute(
            "INSERT INTO notes (id, owner_id, title, pinned, updated_at) VALUES ('n-local', 'alice', 'mine', 0, ?)",
            [.text("2026-01-01T00:00:00.000Z")])
        let applier = RebuildApplier(context: fixture.context)
        try applier.start(scope: "catalog")
        #expect(try applier.runPage(scope: "catalog") == false)
        #expect(try Self.indexes(fixture) == declared)
        #expect(try Self.deferredRecord(fixture) == nil)
    }

    @Test("a table that holds rows keeps its indexes when a later scope's rebuild defers the empty tables' ones")
    func tableWithRowsKeepsIndexes() throws {
        let fixture = try SyncFixture(pageLimit: 3)
        try fixture.connect()
        let declared = try Self.indexes(fixture)
        try RebuildApplier(context: fixture.context).rebuild(scope: "catalog")
        #expect(try fixture.count("SELECT count(*) FROM products") > 0)
        #expect(try fixture.count("SELECT count(*) FROM notes") == 0)
        let applier = RebuildApplier(context: fixture.context)
        try applier.start(scope: "user:alice")
        #expect(try applier.runPage(scope: "user:alice") == false)
        let midway = try Self.indexes(fixture)
        #expect(midway.contains(Self.category) && midway.contains(Self.sku))
        #expect(!midway.contains { $0.hasPrefix("notes_owner_updated:") })
        let record = try #require(try Self.deferredRecord(fixture))
        #expect(!record.contains("products_category"))
        try applier.rebuild(scope: "user:alice")
        #expect(try Self.indexes(fixture) == declared)
        #expect(try Self.deferredRecord(fixture) == nil)
        // The deferral of the second scope left the first scope's remembered digest usable: nothing to recompute.
        #expect(try PullApplier(context: fixture.context).pull().verifiedScopes == ["catalog", "user:alice"])
    }
}
