import Foundation
import SQLiteKit
import SynchroClient
import SynchroProtocol
import Testing
import _SeedkitTestSupport
@testable import SeedArtifacts
import SeedSources
@testable import SynchroStore

/// A source that forwards to the server and lets a test rewrite what comes back.
struct RewritingSource: SeedExportSource {
    let base: HTTPExportSource
    var manifest: @Sendable ([UInt8]) -> [UInt8] = { $0 }
    var page: @Sendable (SeedPageRequest, [UInt8]) throws(SeedExportError) -> [UInt8] = { _, bytes in bytes }

    func schemaManifest() throws(SeedExportError) -> [UInt8] { try base.schemaManifest() }
    func exportManifest(pageLimit: Int64) throws(SeedExportError) -> [UInt8] {
        manifest(try base.exportManifest(pageLimit: pageLimit))
    }
    func scopePage(_ request: SeedPageRequest) throws(SeedExportError) -> [UInt8] {
        try page(request, try base.scopePage(request))
    }
}

/// Rewrites the first occurrence of `old` in `bytes`.
func replacingFirst(_ old: String, with new: String, in bytes: [UInt8]) -> [UInt8] {
    let text = String(decoding: bytes, as: UTF8.self)
    guard let range = text.range(of: old) else { return bytes }
    return Array(text.replacingCharacters(in: range, with: new).utf8)
}

@Suite(.serialized) struct ExportTests {
    let server: RunningServer
    let directory: TemporaryDirectory

    init() throws {
        server = try RunningServer(rows: 230)
        directory = try TemporaryDirectory(prefix: "seedkit-export")
    }

    var source: HTTPExportSource {
        get throws { try HTTPExportSource(baseURL: server.baseURL, operatorToken: RunningServer.operatorToken) }
    }

    /// Only the published file (and nothing partial) is in the directory.
    func entries() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory.url.path).sorted()
    }

    @Test func exportsTheDemoCatalogInTheBaselineLayout() throws {
        let output = directory.path("seed.db")
        let report = try SeedExporter.export(from: try source, to: output, options: .init(pageLimit: 50))
        #expect(try entries() == ["seed.db"])
        let catalog = try #require(report.scopes.first { $0.id == "catalog" })
        #expect(report.scopes.count == 1)
        #expect(catalog.cardinality == report.rows)
        #expect(report.rows > 230)

        let db = try Connection(path: output, mode: .readOnly)
        defer { db.close() }
        #expect(try db.userVersion() == 6)
        #expect(try db.journalMode() == .delete)
        #expect(try db.scalar("PRAGMA page_size")?.integerValue == Int64(SeedDatabaseWriter.pageSize))
        #expect(SeedDatabaseWriter.pageSize == 16_384)
        #expect(try db.integrityCheck() == ["ok"])
        let migrations = try db.query("SELECT identifier FROM grdb_migrations ORDER BY rowid") { try $0.text(at: 0) }
        #expect(migrations == SeedBaseline.migrationIdentifiers)
        #expect(try db.scalar("SELECT count(*) FROM _synchro_scope_rows")?.integerValue == report.rows)
        #expect(try db.scalar("SELECT count(*) FROM _synchro_row_versions")?.integerValue == report.rows)
        let products = try db.scalar("SELECT count(*) FROM products")?.integerValue ?? 0
        let categories = try db.scalar("SELECT count(*) FROM categories")?.integerValue ?? 0
        #expect(products + categories == report.rows)
        #expect(try db.scalar("SELECT count(*) FROM _synchro_pending_changes")?.integerValue == 0)
        #expect(try db.scalar("SELECT value FROM _synchro_meta WHERE key = 'snapshot_complete'")?.textValue == "1")
        #expect(try db.scalar("SELECT value FROM _synchro_meta WHERE key = 'seed_export_id'")?.textValue == report.exportID)
        let keys = try db.query("SELECT key FROM _synchro_meta ORDER BY key") { try $0.text(at: 0) }
        #expect(keys == MetaKey.seedKeys.map(\.rawValue).sorted())
        let triggers = try db.scalar("SELECT count(*) FROM sqlite_schema WHERE type = 'trigger'")?.integerValue
        #expect(triggers == Int64(3 * 4))
        let receipt = try db.scalar("SELECT receipt FROM _synchro_seed_receipts WHERE scope_id = 'catalog'")?.textValue
        #expect(receipt?.hasPrefix("sc1.") == true)
        let scope = try db.rows("SELECT cursor, checksum, local_checksum, generation FROM _synchro_scopes")
        #expect(scope.count == 1)
        #expect(scope.first?[0] == .null)
        #expect(scope.first?[1] == scope.first?[2])
        #expect(scope.first?[1].textValue?.contains(catalog.checksum.hex) == true)
    }

    @Test func theCaptureTriggersRecordLocalWritesOnTheLegacyQueue() throws {
        let output = directory.path("seed.db")
        _ = try SeedExporter.export(from: try source, to: output, options: .init(pageLimit: 100))
        let db = try Connection(path: output)
        defer { db.close() }
        let id = try #require(try db.scalar("SELECT id FROM products ORDER BY id LIMIT 1")?.integerValue)
        try db.run("UPDATE products SET title = 'changed' WHERE id = ?", [.integer(id)])
        try db.run("DELETE FROM categories WHERE id = (SELECT min(id) FROM categories)")
        let queue = try db.rows("SELECT table_name, operation, base_updated_at IS NOT NULL FROM _synchro_pending_changes ORDER BY table_name")
        #expect(queue == [
            [.text("categories"), .text("delete"), .integer(1)],
            [.text("products"), .text("update"), .integer(1)],
        ])
    }

    @Test func theClientOpensTheSeedAndMigratesItForward() throws {
        let output = directory.path("seed.db")
        let report = try SeedExporter.export(from: try source, to: output, options: .init(pageLimit: 100))
        let copy = directory.path("app.db")
        try FileManager.default.copyItem(atPath: output, toPath: copy)
        let store = try ClientStore(configuration: ClientStoreConfiguration(path: copy, clientID: "device-1"))
        defer { store.close() }
        #expect(store.openedLayout.kind == .interchangeBaseline)
        #expect(try store.meta(.snapshotComplete) == "1")
        let products = try store.query("SELECT count(*) AS n FROM products")
        let categories = try store.query("SELECT count(*) AS n FROM categories")
        let count = (products.first?["n"]?.integerValue ?? 0) + (categories.first?["n"]?.integerValue ?? 0)
        #expect(count == report.rows)
    }

    @Test func anExistingOutputIsNeverReplacedWithoutOverwrite() throws {
        let output = directory.path("seed.db")
        try Data("keep".utf8).write(to: URL(fileURLWithPath: output))
        #expect(throws: SeedExportError.self) {
            try SeedExporter.export(from: try source, to: output)
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: output)) == Data("keep".utf8))
        _ = try SeedExporter.export(from: try source, to: output, options: .init(overwrite: true))
        #expect(try Connection(path: output, mode: .readOnly).integrityCheck() == ["ok"])
        #expect(try entries() == ["seed.db"])
    }

    @Test func scopesMayOnlyNarrowThePortableSet() throws {
        let error = #expect(throws: SeedExportError.self) {
            try SeedExporter.export(from: try source, to: directory.path("seed.db"), options: .init(scopes: ["user:alice"]))
        }
        #expect(error?.rule == "scope_not_portable")
        #expect(try entries().isEmpty)
    }

    @Test(arguments: [
        ("a changed row value", "row_digest_mismatch"),
        ("a changed row checksum", "row_digest_mismatch"),
        ("a skipped page", "page_ordinal_mismatch"),
        ("a page for another scope", "page_scope_mismatch"),
        ("a source failure", "source_refused"),
    ])
    func aBadPageAbortsTheExportAndPublishesNothing(fault: String, rule: String) throws {
        let base = try source
        var rewriting = RewritingSource(base: base)
        rewriting.page = { request, bytes throws(SeedExportError) in
            guard request.expectedRowOrdinal == 50 else { return bytes }
            switch fault {
            case "a changed row value": return replacingFirst("\"fld_product_title\":\"", with: "\"fld_product_title\":\"X", in: bytes)
            case "a changed row checksum":
                // A well-formed checksum object whose digest is not the row's.
                let text = String(decoding: bytes, as: UTF8.self)
                guard let range = text.range(of: "\"digest\":\"") else { return bytes }
                let first = text[range.upperBound]
                return Array(text.replacingCharacters(
                    in: range.upperBound..<text.index(after: range.upperBound), with: first == "0" ? "1" : "0").utf8)
            case "a page for another scope": return replacingFirst("\"scope\":\"catalog\"", with: "\"scope\":\"catalogue\"", in: bytes)
            case "a skipped page":
                // Serve the page after this one in its place.
                let json = try? StrictJSONParser().parse(bytes)
                guard let next = json?.objectValue?["page_token"]?.stringValue else { return bytes }
                let following = try base.scopePage(SeedPageRequest(
                    scopeID: request.scopeID, pageToken: next, receipt: request.receipt,
                    expectedRowOrdinal: 100, limit: request.limit))
                return following
            default: throw .refused(route: "scope page", status: 503, code: nil)
            }
        }
        let error = #expect(throws: SeedExportError.self) {
            try SeedExporter.export(from: rewriting, to: directory.path("seed.db"), options: .init(pageLimit: 50))
        }
        #expect(error?.rule == rule)
        #expect(try entries().isEmpty)
    }

    @Test func aTamperedExportManifestIsRefusedBeforeAnyRowIsRead() throws {
        var rewriting = RewritingSource(base: try source)
        rewriting.manifest = { bytes in replacingFirst("\"cardinality\":", with: "\"cardinality\":1", in: bytes) }
        let error = #expect(throws: SeedExportError.self) {
            try SeedExporter.export(from: rewriting, to: directory.path("seed.db"))
        }
        #expect(error?.rule == "export_manifest_hash_mismatch")
        #expect(try entries().isEmpty)
    }
}
