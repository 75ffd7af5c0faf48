import Foundation
import SQLiteKit
@testable import SynchroClient
import SynchroProtocol
import Testing
import _SeedkitTestSupport
@testable import SynchroStore

/// Stored scope digest entries (docs/decisions.md, "Stored scope digests on the client"): a steady verification
/// after a small change reads the stored digests in identity order and re-digests only the changed rows, with the
/// same result as recomputing every row; anything the guards cannot vouch for recomputes every row.
@Suite("Stored scope digests")
struct StoredScopeDigestsTests {
    static func category(_ id: Int64, _ name: String) -> JSONValue {
        .object(JSONObject([
            JSONMember("fld_category_id", .number(JSONNumber(id))),
            JSONMember("fld_category_name", .string(name)),
        ]))
    }

    /// A changed category on the server, pulled and verified.
    static func pullChange(_ fixture: SyncFixture, id: Int64, name: String) throws -> PullPageOutcome {
        _ = try fixture.server.engine.operatorWrite(
            table: "tbl_categories", pk: .number(JSONNumber(id)), row: category(id, name))
        return try PullApplier(context: fixture.context).pull()
    }

    /// The catalog digest recomputed from every row, beside the engine.
    static func fullDigest(_ fixture: SyncFixture) throws -> Checksum {
        try fixture.store.serverApply { transaction in
            let rows = LocalRows(
                connection: transaction.connection, manifest: try LocalRows.activeManifest(on: transaction.connection))
            return try rows.audit(scope: "catalog", detailed: false).checksum
        }
    }

    func storedCount(_ fixture: SyncFixture, _ filter: String = "") throws -> Int64 {
        try fixture.count("SELECT count(*) FROM _synchro_seedkit_row_digests WHERE scope_id = 'catalog'\(filter)")
    }

    /// The catalog's kept edge count, the cardinality a steady verification declares.
    func keptCount(_ fixture: SyncFixture) throws -> Int64 {
        try fixture.count("SELECT edges FROM _synchro_seedkit_digest_counts WHERE scope_id = 'catalog'")
    }

    @Test("updates, inserts and deletes pulled one at a time verify with the stored digests, equal to every row's")
    func steadyChangesMatchFullRecomputation() throws {
        let fixture = try SyncFixture()
        try fixture.connectAndRebuild()
        // The first change recomputes every row and writes the entries.
        #expect(try Self.pullChange(fixture, id: 1, name: "First").verifiedScopes == ["catalog", "user:alice"])
        let edges = try fixture.count("SELECT count(*) FROM _synchro_scope_rows WHERE scope_id = 'catalog'")
        #expect(try storedCount(fixture) == edges)
        #expect(try keptCount(fixture) == edges)
        #expect(try storedCount(fixture, " AND row_digest IS NULL") == 0)

        #expect(try Self.pullChange(fixture, id: 2, name: "Second").verifiedScopes == ["catalog", "user:alice"])
        #expect(try Self.pullChange(fixture, id: 90_001, name: "Added").verifiedScopes == ["catalog", "user:alice"])
        #expect(try storedCount(fixture) == edges + 1)
        #expect(try keptCount(fixture) == edges + 1)
        _ = try fixture.server.engine.operatorDelete(table: "tbl_categories", pk: .number(JSONNumber(90_001)))
        let deleted = try PullApplier(context: fixture.context).pull()

        #expect(deleted.verifiedScopes == ["catalog", "user:alice"])
        #expect(deleted.rebuildRequired.isEmpty)
        let stored = try #require(try fixture.scopes().first { $0.id == "catalog" }?.checksum)
        #expect(SeedReceiptStore.parseChecksum(stored) == (try Self.fullDigest(fixture)))
        #expect(try storedCount(fixture, " AND row_digest IS NULL") == 0)
        #expect(try fixture.count("SELECT count(*) FROM _synchro_seedkit_pending_edges") == 0)
        #expect(try storedCount(fixture) == (try fixture.count(
            "SELECT count(*) FROM _synchro_scope_rows WHERE scope_id = 'catalog'")))
        #expect(try keptCount(fixture) == edges)
    }

    @Test("a kept edge count that differs from the entries is not trusted: every row is recomputed and it is rewritten")
    func forgedCountRecomputesEveryRow() throws {
        let fixture = try SyncFixture()
        try fixture.connectAndRebuild()
        _ = try Self.pullChange(fixture, id: 1, name: "First")
        let edges = try keptCount(fixture)
        // A forged entry digest alone fails the stored path's verification (``storedEntriesAreRead``); with a wrong
        // count beside it the stored pass refuses at its end, and the recomputation from every row verifies.
        try fixture.store.trackedServerApply { connection in
            try connection.run("""
                UPDATE _synchro_seedkit_row_digests SET row_digest = zeroblob(32)
                WHERE scope_id = 'catalog' AND identity = (
                    SELECT max(identity) FROM _synchro_seedkit_row_digests WHERE scope_id = 'catalog')
                """)
            try connection.run("UPDATE _synchro_seedkit_digest_counts SET edges = edges + 1 WHERE scope_id = 'catalog'")
        }

        let outcome = try Self.pullChange(fixture, id: 2, name: "Second")

        #expect(outcome.rebuildRequired.isEmpty)
        #expect(outcome.verifiedScopes == ["catalog", "user:alice"])
        #expect(try keptCount(fixture) == edges)
        #expect(try storedCount(fixture, " AND row_digest = zeroblob(32)") == 0)
    }

    @Test("the stored digest of an unchanged row is what a steady verification hashes (a forged one fails it)")
    func storedEntriesAreRead() throws {
        let fixture = try SyncFixture()
        try fixture.connectAndRebuild()
        _ = try Self.pullChange(fixture, id: 1, name: "First")
        // Only a tracked engine transaction keeps the entries current; nothing in the engine writes them this way.
        try fixture.store.trackedServerApply { connection in
            try connection.run("""
                UPDATE _synchro_seedkit_row_digests SET row_digest = zeroblob(32)
                WHERE scope_id = 'catalog' AND identity = (
                    SELECT max(identity) FROM _synchro_seedkit_row_digests WHERE scope_id = 'catalog')
                """)
        }

        let outcome = try Self.pullChange(fixture, id: 2, name: "Second")

        #expect(outcome.rebuildRequired == ["catalog"])
    }

    @Test("an uncaptured change by another connection after the entries were written is still detected")
    func otherConnectionWriteRecomputesEveryRow() throws {
        let fixture = try SyncFixture()
        try fixture.connectAndRebuild()
        _ = try Self.pullChange(fixture, id: 1, name: "First")
        try fixture.storeFixture.inspect { connection in
            try connection.transaction(kind: .immediate) {
                try connection.run("UPDATE _synchro_meta SET value = '1' WHERE key = 'sync_lock'")
                try connection.run(ScopeDigestMemoTests.tamper)
                try connection.run("UPDATE _synchro_meta SET value = '0' WHERE key = 'sync_lock'")
            }
        }

        let outcome = try Self.pullChange(fixture, id: 2, name: "Second")

        #expect(outcome.rebuildRequired == ["catalog"])
        #expect(outcome.verifiedScopes == ["user:alice"])
    }

    @Test("an untracked engine write after the entries were written recomputes every row and detects it")
    func untrackedEngineWriteRecomputesEveryRow() throws {
        let fixture = try SyncFixture()
        try fixture.connectAndRebuild()
        _ = try Self.pullChange(fixture, id: 1, name: "First")
        try fixture.store.serverApply { try $0.execute(ScopeDigestMemoTests.tamper) }

        let outcome = try Self.pullChange(fixture, id: 2, name: "Second")

        #expect(outcome.rebuildRequired == ["catalog"])
    }

    @Test("a captured application write keeps verifying: its protected row contributes the edge's digest")
    func protectedRowUsesEdgeDigest() throws {
        let fixture = try SyncFixture()
        try fixture.connectAndRebuild()
        _ = try Self.pullChange(fixture, id: 1, name: "First")
        try fixture.store.execute(ScopeDigestMemoTests.tamper)
        #expect(try Self.pullChange(fixture, id: 2, name: "Second").verifiedScopes == ["catalog", "user:alice"])

        // Stored for the next steady pull: the protected row stale (its digest is the edge's), the rest current.
        let outcome = try Self.pullChange(fixture, id: 3, name: "Third")

        #expect(outcome.verifiedScopes == ["catalog", "user:alice"])
        #expect(try storedCount(fixture, " AND row_digest IS NULL") == 1)
    }
}

/// The client's chunks of stored entries (docs/decisions.md, "Scope digest input kept as packed chunks").
@Suite("Stored scope digest chunks")
struct StoredScopeDigestChunksTests {
    /// The catalog's entries packed in identity order, as its chunks must hold them.
    static func packedEntries(_ fixture: SyncFixture) throws -> [UInt8] {
        var packed: [UInt8] = []
        try fixture.storeFixture.inspect { connection in
            let rows = try connection.query(
                "SELECT identity, row_digest FROM _synchro_seedkit_row_digests WHERE scope_id = 'catalog' ORDER BY identity"
            ) { [try $0.value(at: 0), try $0.value(at: 1)] }
            for row in rows {
                let identity = try #require(row[0].blobValue)
                withUnsafeBytes(of: UInt64(identity.count).bigEndian) { packed.append(contentsOf: $0) }
                packed += identity + (try #require(row[1].blobValue))
            }
        }
        return packed
    }

    static func chunks(_ fixture: SyncFixture) throws -> [[SQLiteValue]] {
        var chunks: [[SQLiteValue]] = []
        try fixture.storeFixture.inspect { connection in
            chunks = try connection.query(
                "SELECT lower, members, octets FROM _synchro_seedkit_digest_chunks WHERE scope_id = 'catalog' ORDER BY lower"
            ) { [try $0.value(at: 0), try $0.value(at: 1), try $0.value(at: 2)] }
        }
        return chunks
    }

    static func expectChunksHoldEntries(_ fixture: SyncFixture) throws {
        #expect(try fixture.count("SELECT count(*) FROM _synchro_seedkit_dirty_chunks WHERE scope_id = 'catalog'") == 0)
        let chunks = try chunks(fixture)
        #expect(chunks.first?[0].blobValue == [])
        #expect(chunks.flatMap { $0[2].blobValue ?? [] } == (try packedEntries(fixture)))
    }

    @Test("steady changes keep the chunks equal to the entries; a damaged chunk is not used and is packed again")
    func chunksFollowEntries() throws {
        let fixture = try SyncFixture(rows: 1500)
        try fixture.connectAndRebuild()
        _ = try StoredScopeDigestsTests.pullChange(fixture, id: 1, name: "First")
        try Self.expectChunksHoldEntries(fixture)
        #expect(try StoredScopeDigestsTests.pullChange(fixture, id: 2, name: "Second").verifiedScopes
            == ["catalog", "user:alice"])
        #expect(try StoredScopeDigestsTests.pullChange(fixture, id: 90_001, name: "Added").verifiedScopes
            == ["catalog", "user:alice"])
        try Self.expectChunksHoldEntries(fixture)
        #expect(try Self.chunks(fixture).count >= 2)

        // The last chunk loses an octet, inside a tracked apply (the entries stay current): the change below is to a
        // category, in the first chunk, so the damaged chunk would be hashed as stored.
        try fixture.store.trackedServerApply { connection in
            try connection.run("""
                UPDATE _synchro_seedkit_digest_chunks SET octets = substr(octets, 1, length(octets) - 1)
                WHERE scope_id = 'catalog' AND lower = (
                    SELECT max(lower) FROM _synchro_seedkit_digest_chunks WHERE scope_id = 'catalog')
                """)
        }
        let outcome = try StoredScopeDigestsTests.pullChange(fixture, id: 3, name: "Third")
        #expect(outcome.rebuildRequired.isEmpty)
        #expect(outcome.verifiedScopes == ["catalog", "user:alice"])
        try Self.expectChunksHoldEntries(fixture)
        let stored = try #require(try fixture.scopes().first { $0.id == "catalog" }?.checksum)
        #expect(SeedReceiptStore.parseChecksum(stored) == (try StoredScopeDigestsTests.fullDigest(fixture)))
    }
}
