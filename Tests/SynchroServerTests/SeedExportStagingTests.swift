import Foundation
import SQLiteKit
@testable import SynchroServer
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// Seed exports stage their rows by reference, like rebuild sessions (docs/decisions.md, "Seed exports stage by
/// reference"): the projection's triggers keep every staged body, so pages replay byte for byte whatever is
/// written after the manifest call, and exports staged by copy before layout 5 are still served.
@Suite("Seed export staging")
struct SeedExportStagingTests {
    /// The integers of the one row `sql` returns.
    static func counts(_ server: RunningServer, _ sql: String) throws -> [Int64?] {
        try #require(try server.engine.rowsForTesting(sql).first).map(\.integerValue)
    }

    @Test("rows are staged by reference; pages fetched again after their rows changed or were deleted are identical")
    func stagedByReferenceReplaysAfterWrites() throws {
        let server = try RunningServer()
        let exporter = SeedExporter(server: server)
        let schema = try exporter.schema()
        let manifest = try exporter.manifest(pageLimit: 100)
        let catalog = try manifest.scope("catalog")
        let staged = "SELECT count(*), count(row) FROM rebuild_rows WHERE session_id < 0"
        #expect(try Self.counts(server, staged) == [340, 0], "no body copied")
        let before = try exporter.export(catalog, of: manifest, schema: schema)

        let products = before.records.filter { $0["table"] == .string("tbl_products") }
        try #require(products.count >= 3)
        try SeedExportTests.restock(server, from: products, to: 7)
        for record in products[1...2] {
            let pk = try #require(record["pk"]?.objectValue?["fld_product_id"])
            _ = try server.engine.operatorDelete(table: "tbl_products", pk: pk)
        }
        server.engine.materialize()
        #expect(try Self.counts(server, staged) == [340, 3], "three bodies saved")

        let after = try exporter.export(catalog, of: manifest, schema: schema)
        #expect(after.pages.map(\.body) == before.pages.map(\.body), "replayed pages are byte-identical")
        #expect(try exporter.manifest(pageLimit: 100).scope("catalog").cardinality == 338)
    }

    @Test("an export past its lifetime is refused, and the next manifest call drops its stage and its reference")
    func expiredExportIsRefusedAndPurged() throws {
        let server = try RunningServer()
        let exporter = SeedExporter(server: server)
        let schema = try exporter.schema()
        let old = try exporter.manifest(pageLimit: 100)
        let oldCatalog = try old.scope("catalog")
        let before = try exporter.export(oldCatalog, of: old, schema: schema)
        let first = { (scope: ExportManifest.Scope, manifest: ExportManifest) throws -> RunningServer.Reply in
            try exporter.page(scope: scope.id, token: scope.pageToken, receipt: scope.continuation, ordinal: 0,
                              limit: manifest.pageLimit)
        }
        #expect(try first(oldCatalog, old).status == 200)

        // One microsecond past the lifetime, on the server's clock.
        _ = try server.engine.executeForTesting(
            "UPDATE seed_exports SET created_us = created_us - ?", [.integer(SeedExportStaging.lifetime)])
        let refused = try first(oldCatalog, old)
        #expect(refused.status == 400, "an expired export's page is refused: \(refused.text)")
        #expect(try Self.counts(server, "SELECT count(*) FROM rebuild_rows WHERE session_id < 0") == [340])

        let new = try exporter.manifest(pageLimit: 100)
        #expect(try Self.counts(server, """
            SELECT count(*), (SELECT count(*) FROM rebuild_references WHERE session_id < 0)
            FROM rebuild_rows WHERE session_id < 0
            """) == [340, 1], "only the new export's run and reference are left")
        // A write after the purge saves a body for the live export only.
        try SeedExportTests.restock(server, from: before.records, to: 11)
        server.engine.materialize()
        #expect(try Self.counts(server, "SELECT count(row) FROM rebuild_rows WHERE session_id < 0") == [1])
        let newCatalog = try new.scope("catalog")
        #expect(try first(newCatalog, new).status == 200)
        #expect(try first(oldCatalog, old).status == 400, "still refused once purged")
    }

    @Test("an export staged by copy before layout 5 is served byte for byte after the migration")
    func exportStagedByCopyReplaysAfterMigration() throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-server-migration")
        let before: ScopeExport
        let manifest: ExportManifest
        let schema: SchemaManifest
        do {
            let server = try RunningServer(reopening: directory, store: .sqlite)
            let exporter = SeedExporter(server: server)
            schema = try exporter.schema()
            manifest = try exporter.manifest(pageLimit: 64)
            before = try exporter.export(try manifest.scope("catalog"), of: manifest, schema: schema)
        }
        // What a layout-4 server stored for the same export: every row copied with its ordinal, no staged run.
        let db = try Connection(path: directory.path("server.db"))
        try db.execute("""
            INSERT INTO seed_export_rows(export_key, scope_id, ordinal, table_id, pk, row, server_version, row_digest)
                SELECT s.export_key, s.scope_id, r.staged - s.first_staged, r.table_id, r.pk, coalesce(r.row, p.row),
                       r.server_version, r.row_digest
                FROM seed_export_scopes s JOIN rebuild_rows r ON r.session_id = -s.export_key
                    AND r.staged >= s.first_staged AND r.staged < s.first_staged + s.row_count
                LEFT JOIN projection p ON p.identity = r.identity;
            DELETE FROM rebuild_rows WHERE session_id < 0;
            DELETE FROM rebuild_references WHERE session_id < 0;
            ALTER TABLE seed_export_scopes DROP COLUMN first_staged;
            PRAGMA user_version = 4;
            """)
        #expect(try db.scalar("SELECT count(*) FROM seed_export_rows")?.integerValue == 340)

        let server = try RunningServer(reopening: directory, store: .sqlite)
        #expect(try db.userVersion() == ServerSchema.version)
        let exporter = SeedExporter(server: server)
        try SeedExportTests.restock(server, from: before.records, to: 3)
        let after = try exporter.export(try manifest.scope("catalog"), of: manifest, schema: schema)
        #expect(after.pages.map(\.body) == before.pages.map(\.body), "replayed pages are byte-identical")
        #expect(try db.scalar("SELECT count(*) FROM rebuild_rows WHERE session_id < 0")?.integerValue == 0)
        _ = try exporter.manifest(pageLimit: 64)
        #expect(try db.scalar("SELECT count(*) FROM rebuild_rows WHERE session_id < 0")?.integerValue == 340)
    }
}
