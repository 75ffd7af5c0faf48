import Foundation
import SQLiteKit
import Testing
import _SeedkitTestSupport

/// A `seedkit sync` killed between two pages of a fresh store's first rebuild leaves the non-unique indexes dropped
/// and recorded; the next run builds them before anything else and the store ends with every index
/// (`docs/decisions.md`, "Initial rebuild: non-unique manifest indexes built once at finality").
@Suite("process death while the non-unique indexes are deferred", .serialized)
struct DeferredIndexCrashTests {
    /// `name` of every index with SQL on the synced tables, and the deferred record, read from the raw file.
    static func state(_ path: String) throws -> (indexes: [String], record: String?) {
        let connection = try Connection(path: path, mode: .readWrite)
        defer { connection.close() }
        try connection.setBusyTimeout(milliseconds: 5_000)
        let indexes = try connection.query("""
            SELECT name FROM sqlite_schema WHERE type = 'index' AND sql IS NOT NULL
                AND tbl_name IN ('categories', 'notes', 'products', 'tasks') ORDER BY name
            """) { try $0.text(at: 0) }
        let record = try connection.scalar(
            "SELECT value FROM _synchro_meta WHERE key = 'seedkit_deferred_indexes'")?.textValue
        return (indexes, record)
    }

    @Test("a kill after the first rebuild page leaves the record; the next sync builds the indexes and verifies")
    func killBetweenPages() throws {
        let world = try DeviceWorld()
        let device = world.database("device.db")
        try world.expectKilled(world.sync(device, pageLimit: 20, crashAt: "rebuild.page"))
        let killed = try Self.state(device)
        #expect(!killed.indexes.contains("products_category"))
        #expect(killed.indexes.contains("products_sku"))
        #expect(killed.record?.contains("products_category") == true)

        try world.expectSuccess(world.sync(device, pageLimit: 20))
        let after = try Self.state(device)
        #expect(after.indexes == ["notes_owner_updated", "products_category", "products_sku", "tasks_owner_position"])
        #expect(after.record == nil)
        try world.expectValid(device)
    }
}
