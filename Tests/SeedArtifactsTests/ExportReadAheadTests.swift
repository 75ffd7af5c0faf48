import Foundation
import SQLiteKit
import Synchronization
import SynchroProtocol
import Testing
import _SeedkitTestSupport
@testable import SeedArtifacts
import SeedSources
@testable import SynchroStore

/// The export's order of work (docs/decisions.md, "Export: indexes built at the end, pages verified ahead"): the
/// next page is read and checked while the current one is written, the internal tables' named indexes are built
/// after the rows, and the result is still the seed `spec/seed-format.md` §2 describes.
@Suite(.serialized) struct ExportReadAheadTests {
    let server: RunningServer
    let directory: TemporaryDirectory

    init() throws {
        server = try RunningServer(rows: 230)
        directory = try TemporaryDirectory(prefix: "seedkit-export-ahead")
    }

    var source: HTTPExportSource {
        get throws { try HTTPExportSource(baseURL: server.baseURL, operatorToken: RunningServer.operatorToken) }
    }

    /// A record that breaks a rule is reported at its own row ordinal, after the rows before it on its page, even
    /// though its page was checked on another thread (in halves from 64 records: a bad record in either half, or
    /// one in each); the page read ahead is never written and nothing is published.
    @Test(arguments: [(50, [2]), (100, [3]), (100, [70]), (100, [60, 40])] as [(Int64, [Int])])
    func aBadRecordIsReportedAtItsRowAndNothingIsPublished(pageLimit: Int64, bad: [Int]) throws {
        let requested = Mutex<[Int64]>([])
        var rewriting = RewritingSource(base: try source)
        rewriting.page = { request, bytes throws(SeedExportError) in
            requested.withLock { $0.append(request.expectedRowOrdinal) }
            guard request.expectedRowOrdinal == pageLimit else { return bytes }
            var rewritten = bytes
            for index in bad { rewritten = Self.changingVersion(ofRecord: index, in: rewritten) }
            return rewritten
        }
        let error = #expect(throws: SeedExportError.self) {
            try SeedExporter.export(
                from: rewriting, to: directory.path("seed.db"), options: .init(pageLimit: pageLimit))
        }
        guard case .record(let scope, let ordinal, _, let rule)? = error else {
            Issue.record("expected a record failure, got \(String(describing: error))")
            return
        }
        #expect(scope == "catalog")
        #expect(rule == "row_digest_mismatch")
        #expect(ordinal == pageLimit + Int64(bad.min() ?? 0))
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path).isEmpty)
        // The first page, then the bad one (read ahead while the first was written), then the one after it, read
        // ahead while the bad page's rows before the bad record were written; nothing after the failure.
        #expect(requested.withLock { $0 } == [0, pageLimit, 2 * pageLimit])
    }

    /// The page with the server version of its record `index` (0-based) changed, which changes the row's digest.
    static func changingVersion(ofRecord index: Int, in bytes: [UInt8]) -> [UInt8] {
        var text = String(decoding: bytes, as: UTF8.self)
        var from = text.startIndex
        for _ in 0...index {
            guard let range = text.range(of: "\"row_checksum\":", range: from..<text.endIndex) else { return bytes }
            from = range.upperBound
        }
        guard let version = text.range(of: "\"server_version\":\"", range: from..<text.endIndex) else { return bytes }
        text.insert("X", at: version.upperBound)
        return Array(text.utf8)
    }

    /// The named indexes are built after the rows inside the one transaction: the committed seed has each with its
    /// exact SQL, complete (SQLite's integrity check compares every index entry with its row) and used.
    @Test func theNamedIndexesAreBuiltOverEveryRow() throws {
        let output = directory.path("seed.db")
        let report = try SeedExporter.export(from: try source, to: output, options: .init(pageLimit: 50))
        let db = try Connection(path: output, mode: .readOnly)
        defer { db.close() }
        for table in SeedBaseline.tables {
            for index in table.indexes {
                let sql = try db.scalar("SELECT sql FROM sqlite_schema WHERE type = 'index' AND name = ?", [.text(index.name)])
                #expect(sql?.textValue == index.sql)
            }
        }
        #expect(try db.integrityCheck() == ["ok"])
        let indexed = try db.scalar(
            "SELECT count(*) FROM _synchro_scope_rows INDEXED BY idx_synchro_scope_rows_record WHERE table_name > ''")
        #expect(indexed?.integerValue == report.rows)
    }

    /// Every row version's `row_checksum` and every edge's checksum spell the row's digest exactly as the RFC 8785
    /// encoder would (the writer fills a template instead of encoding each).
    @Test func checksumTextsAreTheCanonicalForms() throws {
        let output = directory.path("seed.db")
        _ = try SeedExporter.export(from: try source, to: output, options: .init(pageLimit: 50))
        let db = try Connection(path: output, mode: .readOnly)
        defer { db.close() }
        let rows = try db.query("""
            SELECT v.row_checksum, e.checksum FROM _synchro_row_versions v
            JOIN _synchro_scope_rows e ON e.table_name = v.table_name AND e.record_id = v.record_id
            """) { (try $0.text(at: 0), try $0.text(at: 1)) }
        #expect(rows.count > 230)
        for (versionText, edgeHex) in rows {
            let digest = try #require(Hex.decode(edgeHex))
            #expect(Hex.encode(digest) == edgeHex)
            #expect(versionText == (try CanonicalJSON.string(Checksum(digest: digest).json)))
        }
    }
}
