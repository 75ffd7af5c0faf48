import Foundation
import SQLiteKit
@testable import SynchroServer
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// The initial load of a new store goes in batches (``InitialLoadBatch``; multi-row statements on PostgreSQL): the
/// same dataset loads the same rows, versions, digests and membership edges on SQLite and on PostgreSQL, across
/// batch and statement boundaries (2,000 rows per batch, 500 per PostgreSQL statement) and a partial last one.
@Suite("Initial load of a new store", .serialized)
struct InitialLoadTests {
    static let rows = 4321

    @Test("SQLite and PostgreSQL load identical source rows, projection, membership and version counter")
    func sameLoadOnBothStores() throws {
        let dataset = try Dataset(directory: RepositoryLayout.root.appendingPathComponent("seeds/demo"))
        let directory = try TemporaryDirectory(prefix: "seedkit-initial-load")
        let sqlite = try ServerStore(
            path: directory.path("server.db"), dataset: dataset, rowsOverride: Self.rows, clock: ManualServerClock())
        let database = try RunningServer.newPostgresDatabaseName()
        let postgres = try ServerStore(
            postgres: try PostgresCluster.shared().socketConnectionString(database: database), dataset: dataset,
            rowsOverride: Self.rows, clock: ManualServerClock())

        let queries = [
            "SELECT identity, table_id, pk, row, server_version, state FROM source_rows ORDER BY identity",
            "SELECT identity, table_id, pk, row, server_version, row_digest, state FROM projection ORDER BY identity",
            "SELECT scope_id, identity, row_digest FROM membership ORDER BY scope_id, identity",
        ]
        for query in queries {
            let expected = try sqlite.db.cachedStatement(query).rows()
            let loaded = try postgres.db.cachedStatement(query).rows()
            #expect(expected.count >= Self.rows, "\(query): \(expected.count) rows on SQLite")
            #expect(loaded.count == expected.count, "\(query): \(loaded.count) rows on PostgreSQL, \(expected.count) on SQLite")
            // Compared outside the expectation: a failure names the query, not thousands of stored values.
            let same = loaded == expected
            #expect(same, "\(query): the stores differ")
        }
        let counter = try sqlite.metaInteger("version_counter")
        #expect(counter == Int64(try sqlite.db.cachedStatement("SELECT count(*) FROM source_rows").rows()[0][0]
            .integerValue ?? -1))
        #expect(try postgres.metaInteger("version_counter") == counter)
        // The next version continues the counter the load left.
        #expect(try sqlite.nextServerVersion() == "v\(counter + 1)")
        #expect(try postgres.nextServerVersion() == "v\(counter + 1)")
    }
}
