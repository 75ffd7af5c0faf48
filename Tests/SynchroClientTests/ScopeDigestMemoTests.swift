import Foundation
import SQLiteKit
@testable import SynchroClient
import SynchroProtocol
import Testing
import _SeedkitTestSupport
@testable import SynchroStore

/// The scope digest memo (docs/decisions.md, "Scope digest memo"): a digest is reused only over provably
/// unchanged state; every write between two verifications forces a real recomputation.
@Suite("Scope digest memo")
struct ScopeDigestMemoTests {
    /// An uncaptured change of one catalog row: nothing protects it, so the scope no longer verifies.
    static let tamper = "UPDATE categories SET name = 'Tampered' WHERE id = (SELECT min(id) FROM categories)"

    @Test("rebuild finality remembers each verified digest and the terminal pull verifies with it")
    func finalityDigestIsReused() throws {
        let fixture = try SyncFixture()
        try fixture.connectAndRebuild()
        let remembered = try #require(fixture.store.scopeDigests.checksum(of: "catalog"))
        #expect(fixture.store.scopeDigests.checksum(of: "user:alice") != nil)

        let outcome = try PullApplier(context: fixture.context).pull()

        #expect(outcome.verifiedScopes == ["catalog", "user:alice"])
        #expect(outcome.rebuildRequired.isEmpty)
        #expect(fixture.store.scopeDigests.checksum(of: "catalog") == remembered)
        let stored = try #require(try fixture.scopes().first { $0.id == "catalog" }?.checksum)
        #expect(SeedReceiptStore.parseChecksum(stored) == remembered)
    }

    @Test("a steady connect (the store already bound) keeps the remembered digests: the idle cycle stays cheap")
    func steadyConnectKeepsDigests() throws {
        let fixture = try SyncFixture()
        try fixture.connectAndRebuild()
        let remembered = try #require(fixture.store.scopeDigests.checksum(of: "catalog"))
        try fixture.connect()
        #expect(fixture.store.scopeDigests.checksum(of: "catalog") == remembered)
    }

    @Test("an engine write between two verifications forgets the digests and the tampered row is detected")
    func engineWriteForcesRecomputation() throws {
        let fixture = try SyncFixture()
        try fixture.connectAndRebuild()
        try fixture.store.serverApply { try $0.execute(Self.tamper) }
        #expect(fixture.store.scopeDigests.checksum(of: "catalog") == nil)

        let outcome = try PullApplier(context: fixture.context).pull()

        #expect(outcome.rebuildRequired == ["catalog"])
        #expect(outcome.verifiedScopes == ["user:alice"])
        let catalog = try #require(try fixture.scopes().first { $0.id == "catalog" })
        #expect(catalog.cursor == nil && catalog.checksum == nil)
    }

    @Test("a commit by another connection between two verifications is detected although the memo kept the entry")
    func otherConnectionWriteForcesRecomputation() throws {
        let fixture = try SyncFixture()
        try fixture.connectAndRebuild()
        // Another connection (another process, or the application connection) changes a row without capture.
        try fixture.storeFixture.inspect { connection in
            try connection.transaction(kind: .immediate) {
                try connection.run("UPDATE _synchro_meta SET value = '1' WHERE key = 'sync_lock'")
                try connection.run(Self.tamper)
                try connection.run("UPDATE _synchro_meta SET value = '0' WHERE key = 'sync_lock'")
            }
        }
        #expect(fixture.store.scopeDigests.checksum(of: "catalog") != nil)
        #expect(try fixture.count("SELECT count(*) FROM _synchro_pending_changes") == 0)

        let outcome = try PullApplier(context: fixture.context).pull()

        #expect(outcome.rebuildRequired == ["catalog"])
        #expect(outcome.verifiedScopes == ["user:alice"])
    }

    @Test("a steady pull after a verified pull detects a row changed in between")
    func steadyPullDetectsTamperAfterVerifiedPull() throws {
        let fixture = try SyncFixture()
        try fixture.connectAndRebuild()
        #expect(try PullApplier(context: fixture.context).pull().rebuildRequired.isEmpty)
        try fixture.store.serverApply { try $0.execute(Self.tamper) }

        let outcome = try PullApplier(context: fixture.context).pull()

        #expect(outcome.rebuildRequired == ["catalog"])
        // The rebuild it calls for restores the scope, and the next pull verifies it again.
        try RebuildApplier(context: fixture.context).rebuild(scope: "catalog")
        #expect(try PullApplier(context: fixture.context).pull().verifiedScopes == ["catalog", "user:alice"])
    }

    @Test("an application write between verifications is recomputed: the captured row is protected and verifies")
    func applicationWriteKeepsVerifying() throws {
        let fixture = try SyncFixture()
        try fixture.connectAndRebuild()
        try fixture.store.execute(Self.tamper)
        #expect(try fixture.count("SELECT count(*) FROM _synchro_pending_changes") == 1)

        let outcome = try PullApplier(context: fixture.context).pull()

        #expect(outcome.verifiedScopes == ["catalog", "user:alice"])
        #expect(outcome.rebuildRequired.isEmpty)
    }

    @Test("a pull page that changes rows replaces the remembered digest with the recomputed one")
    func changedPageRecomputes() throws {
        let fixture = try SyncFixture()
        try fixture.connectAndRebuild()
        let before = try #require(fixture.store.scopeDigests.checksum(of: "catalog"))
        _ = try fixture.server.engine.operatorWrite(
            table: "tbl_categories", pk: .number(JSONNumber(3)),
            row: .object(JSONObject([
                JSONMember("fld_category_id", .number(JSONNumber(3))),
                JSONMember("fld_category_name", .string("Kitchen")),
            ])))

        let outcome = try PullApplier(context: fixture.context).pull()

        #expect(outcome.verifiedScopes == ["catalog", "user:alice"])
        let after = try #require(fixture.store.scopeDigests.checksum(of: "catalog"))
        #expect(after != before)
        let stored = try #require(try fixture.scopes().first { $0.id == "catalog" }?.checksum)
        #expect(SeedReceiptStore.parseChecksum(stored) == after)
    }
}

@Suite("Row version checksum text")
struct RowVersionChecksumTextTests {
    @Test("the directly written checksum text is the canonical JSON of the checksum object", arguments: [
        Array(repeating: UInt8(0), count: 32), Array(repeating: UInt8(0xff), count: 32), (0..<32).map { UInt8($0 * 7) },
    ])
    func checksumTextIsCanonical(digest: [UInt8]) throws {
        #expect(try LocalRows.checksumText(digest) == CanonicalJSON.string(Checksum(digest: digest).json))
    }

    @Test("a digest that is not 32 octets has no checksum text")
    func shortDigestIsRefused() {
        #expect(throws: ChecksumError.invalidDigest) { try LocalRows.checksumText([1, 2, 3]) }
    }
}

@Suite("Rebuild page writes in multi-row upserts")
struct RebuildPageBatchWriteTests {
    @Test("""
        full pages in one statement per table and a last page in halved statements write every row, leave a \
        protected row alone and verify
        """)
    func largePagesKeepProtectedRows() throws {
        // 330 catalog rows in pages of 200: the last page's 130 rows take statements of 100, 25, 3, 1 and 1 rows.
        let fixture = try SyncFixture(rows: 330, pageLimit: 200)
        try fixture.connectAndRebuild()
        let products = try fixture.count("SELECT count(*) FROM products")
        #expect(products > 200)
        let id = try fixture.count("SELECT id FROM products ORDER BY id LIMIT 1 OFFSET 70")
        try fixture.store.execute("UPDATE products SET stock = 987654 WHERE id = ?", [.integer(id)])

        // A new attempt rewrites the scope from the server; the captured row stays as the application left it.
        try RebuildApplier(context: fixture.context).rebuild(scope: "catalog")

        #expect(try fixture.count("SELECT count(*) FROM products") == products)
        #expect(try fixture.count("SELECT stock FROM products WHERE id = \(id)") == 987654)
        #expect(try fixture.count("SELECT count(*) FROM _synchro_scope_rows WHERE scope_id = 'catalog'") > 200)
        let outcome = try PullApplier(context: fixture.context).pull()
        #expect(outcome.verifiedScopes == ["catalog", "user:alice"])
        #expect(outcome.rebuildRequired.isEmpty)
    }
}
