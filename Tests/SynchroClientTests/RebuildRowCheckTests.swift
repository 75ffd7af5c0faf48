import SQLiteKit
import Testing
import _SeedkitTestSupport

@testable import SynchroClient

/// Rebuild finality takes row digests from the rows read back beside the engine only while nothing can have
/// changed them since (docs/decisions.md, "Rebuild finality from rows checked beside the engine").
@Suite("Rebuild finality from rows checked beside the engine")
struct RebuildRowCheckTests {
    let fixture: SyncFixture

    init() throws {
        fixture = try SyncFixture(rows: 120, pageLimit: 40)
        try fixture.connect()
    }

    /// The record ID of the first product of the catalog scope (on the first page).
    private func firstProductID() throws -> String {
        try #require(try fixture.store.readSyncState { connection in
            try connection.scalar("""
                SELECT record_id FROM _synchro_scope_rows WHERE table_name = 'products'
                ORDER BY CAST(record_id AS INTEGER) LIMIT 1
                """)?
                .textValue
        })
    }

    @Test("rows read back after their page committed give the same finality digest as reading every row again")
    func sameDigest() throws {
        let applier = RebuildApplier(context: fixture.context)
        try applier.start(scope: "catalog")
        let check = try applier.rowCheck()
        var pages = 0
        while try !applier.runPage(scope: "catalog", ahead: nil, check: check).isFinal { pages += 1 }
        #expect(pages >= 2)
        #expect(try fixture.scopes().first { $0.id == "catalog" }?.cursor != nil, "finality verified")
        check.drain()
        let recordID = try firstProductID()
        #expect(check.digest(tableName: "products", recordID: recordID) != nil, "pages were read back")
        check.willWrite([(tableName: "products", recordID: recordID)])
        #expect(check.digest(tableName: "products", recordID: recordID) == nil, "a later write voids it")
    }

    @Test("a row changed by another connection after it was read back is digested again: finality fails")
    func foreignWriteIsSeen() throws {
        let applier = RebuildApplier(context: fixture.context)
        try applier.start(scope: "catalog")
        let check = try applier.rowCheck()
        _ = try applier.runPage(scope: "catalog", ahead: nil, check: check)
        check.drain()
        let recordID = try firstProductID()
        #expect(check.digest(tableName: "products", recordID: recordID) != nil)
        // Another connection changes the row without capture (as a foreign tool would): not protected, so its
        // digest must be computed from what is stored now.
        let other = try Connection(path: fixture.storeFixture.path, mode: .readWrite)
        try other.transaction(kind: .immediate) {
            try other.execute("UPDATE _synchro_meta SET value = '1' WHERE key = 'sync_lock'")
            try other.run(
                "UPDATE products SET title = title || ' (changed)' WHERE id = ?", [.integer(Int64(recordID) ?? 0)])
            #expect(other.changes == 1)
            try other.execute("UPDATE _synchro_meta SET value = '0' WHERE key = 'sync_lock'")
        }
        other.close()
        #expect(throws: SyncError.rebuildChecksumMismatch(scope: "catalog")) {
            while try !applier.runPage(scope: "catalog", ahead: nil, check: check).isFinal {}
        }
    }
}
