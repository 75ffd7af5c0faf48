import SQLiteKit
import Testing
import _SeedkitTestSupport

@testable import SynchroClient

/// Rebuild finality takes row digests from the rows read back beside the engine only while nothing can have
/// changed them since (docs/decisions.md, "Rebuild finality from rows checked beside the engine" and "A rebuild
/// row check of constant memory").
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

    /// The digest finality would take from `check` now, in a transaction of its own (nil: it does not vouch).
    private func checkedDigest(_ check: RebuildRowCheck) throws -> String? {
        let store = fixture.store
        return try store.readSyncState { connection in
            let rows = LocalRows(connection: connection, manifest: try store.activeManifest(on: connection))
            return try rows.checkedScopeDigest(scope: "catalog", check: check)?.hex
        }
    }

    @Test("rows read back after their page committed give the same finality digest as reading every row again")
    func sameDigest() throws {
        let applier = RebuildApplier(context: fixture.context)
        try applier.start(scope: "catalog")
        let check = try applier.rowCheck(scope: "catalog")
        var pages = 0
        while try !applier.runPage(scope: "catalog", ahead: nil, check: check).isFinal { pages += 1 }
        #expect(pages >= 2)
        #expect(try fixture.scopes().first { $0.id == "catalog" }?.cursor != nil, "finality verified")
        let vouched = try #require(check.vouched(), "every committed row was read back and matched its edge")
        #expect(vouched.committedRows > 0)
        #expect(vouched.pendingCount > 0, "the final page's rows are left to finality")
    }

    @Test("the check keeps counts, not rows: the same state before and after many pages")
    func constantState() throws {
        let applier = RebuildApplier(context: fixture.context)
        try applier.start(scope: "catalog")
        let check = try applier.rowCheck(scope: "catalog")
        for _ in 0..<2 { #expect(try !applier.runPage(scope: "catalog", ahead: nil, check: check).isFinal) }
        let vouched = try #require(check.vouched())
        let edges = try fixture.store.readSyncState { connection in
            try connection.scalar("SELECT count(*) FROM _synchro_scope_rows WHERE scope_id = 'catalog'")?
                .integerValue ?? -1
        }
        #expect(Int64(vouched.committedRows) == edges, "every committed row counted once")
        #expect(vouched.pendingRows.isEmpty, "nothing pending between pages")
    }

    @Test("a row written twice by the rebuild makes finality read every row: the edge count differs")
    func rowWrittenTwice() throws {
        let applier = RebuildApplier(context: fixture.context)
        try applier.start(scope: "catalog")
        let check = try applier.rowCheck(scope: "catalog")
        _ = try applier.runPage(scope: "catalog", ahead: nil, check: check)
        let edges = try fixture.store.readSyncState { connection in
            try connection.scalar("SELECT count(*) FROM _synchro_scope_rows WHERE scope_id = 'catalog'")?
                .integerValue ?? -1
        }
        #expect(try checkedDigest(check) != nil, "the committed page is vouched for")
        #expect(Int64(try #require(check.vouched()).committedRows) == edges)
        // The same row again, as a later page would write it: counted twice, one edge.
        let recordID = try firstProductID()
        check.willWrite([(tableName: "products", recordID: recordID)])
        check.committed()
        #expect(try checkedDigest(check) == nil)
        while try !applier.runPage(scope: "catalog", ahead: nil, check: check).isFinal {}
        #expect(try fixture.scopes().first { $0.id == "catalog" }?.cursor != nil, "verified by reading every row")
    }

    @Test("a row that differs from its edge when read back voids the check")
    func mismatchVoids() throws {
        let applier = RebuildApplier(context: fixture.context)
        try applier.start(scope: "catalog")
        _ = try applier.runPage(scope: "catalog", ahead: nil, check: nil)
        let recordID = try firstProductID()
        let other = try Connection(path: fixture.storeFixture.path, mode: .readWrite)
        try other.transaction(kind: .immediate) {
            try other.execute("UPDATE _synchro_meta SET value = '1' WHERE key = 'sync_lock'")
            try other.run(
                "UPDATE products SET title = title || ' (changed)' WHERE id = ?", [.integer(Int64(recordID) ?? 0)])
            try other.execute("UPDATE _synchro_meta SET value = '0' WHERE key = 'sync_lock'")
        }
        other.close()
        // A check begun after the foreign write (its data_version includes it), reading that row back.
        let check = try applier.rowCheck(scope: "catalog")
        check.willWrite([(tableName: "products", recordID: recordID)])
        check.committed()
        #expect(check.vouched() == nil)
    }

    @Test("a row changed by another connection after it was read back is digested again: finality fails")
    func foreignWriteIsSeen() throws {
        let applier = RebuildApplier(context: fixture.context)
        try applier.start(scope: "catalog")
        let check = try applier.rowCheck(scope: "catalog")
        _ = try applier.runPage(scope: "catalog", ahead: nil, check: check)
        #expect(check.vouched() != nil)
        let recordID = try firstProductID()
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
        #expect(try checkedDigest(check) == nil, "data_version moved")
        #expect(throws: SyncError.rebuildChecksumMismatch(scope: "catalog")) {
            while try !applier.runPage(scope: "catalog", ahead: nil, check: check).isFinal {}
        }
    }
}
