import Foundation
import SQLiteKit
import Synchronization
import SynchroProtocol
import Testing
import _SeedkitTestSupport
@testable import SeedArtifacts
@testable import SeedPipeline
import SeedSources

/// Makes a committed, materialized server write before every page call of the export it wraps: the writes land
/// while the export's transaction is open, between its reads, deterministically (no timing).
final class WritingSource: SeedExportSource {
    private let base: PostgresExportSource
    private let server: RunningServer
    let writes = Mutex(0)

    init(_ base: PostgresExportSource, server: RunningServer) {
        self.base = base
        self.server = server
    }

    func schemaManifest() throws(SeedExportError) -> [UInt8] { try base.schemaManifest() }
    func exportManifest(pageLimit: Int64) throws(SeedExportError) -> [UInt8] {
        try base.exportManifest(pageLimit: pageLimit)
    }
    func finish() throws(SeedExportError) { try base.finish() }

    func scopePage(_ request: SeedPageRequest) throws(SeedExportError) -> [UInt8] {
        let count = writes.withLock { count in
            count += 1
            return count
        }
        let row = #"{"fld_category_id":1,"fld_category_name":"renamed during the export \#(count)"}"#
        do {
            try server.engine.operatorWrite(
                table: "tbl_categories", pk: .number(JSONNumber(1)), row: try StrictJSONParser().parse(row))
        } catch {
            Issue.record("the concurrent write failed: \(error)")
        }
        return try base.scopePage(request)
    }
}

/// Keeps the octets of every page a source returns, in order.
final class RecordingSource: SeedExportSource {
    private let base: any SeedExportSource
    let pages = Mutex<[[UInt8]]>([])

    init(_ base: any SeedExportSource) {
        self.base = base
    }

    func schemaManifest() throws(SeedExportError) -> [UInt8] { try base.schemaManifest() }
    func exportManifest(pageLimit: Int64) throws(SeedExportError) -> [UInt8] {
        try base.exportManifest(pageLimit: pageLimit)
    }
    func finish() throws(SeedExportError) { try base.finish() }

    func scopePage(_ request: SeedPageRequest) throws(SeedExportError) -> [UInt8] {
        let page = try base.scopePage(request)
        pages.withLock { $0.append(page) }
        return page
    }

    /// The octets of a page's `records` array: everything but the export's own page token.
    static func records(_ page: [UInt8]) -> [UInt8] {
        let start = Array(#","records":["#.utf8)
        let end = Array(#"],"page_token":"#.utf8)
        guard let from = page.firstRange(of: start)?.upperBound,
              let to = page[from...].firstRange(of: end)?.lowerBound
        else { return [] }
        return Array(page[from..<to])
    }
}

/// Issue #17's end-to-end test: the reference server serves the demo dataset from PostgreSQL, and its own
/// `synchro` functions (``SeedExportFunctions`` in SynchroServer, not the replay fixture) export a seed through
/// `PostgresExportSource` as a login that is a member of `synchro_seed`. That seed has the HTTP export's rows and
/// digests, verifies, installs, and its receipts are accepted at first connect.
@Suite("the reference server's own synchro export functions on PostgreSQL", .serialized)
struct ServerSeedFunctionsTests {
    let cluster: PostgresCluster
    let server: RunningServer
    let directory: TemporaryDirectory
    let database: String
    let exporter: String
    let outsider: String
    let password: String
    static let pageLimit: Int64 = 40

    init() throws {
        cluster = try PostgresCluster.shared()
        server = try RunningServer(rows: 230, store: .postgres)
        directory = try TemporaryDirectory(prefix: "seedkit-server-seed-functions")
        database = try #require(server.postgresDatabase)
        let suffix = UUID().uuidString.lowercased().prefix(8)
        exporter = "server_seed_exporter_\(suffix)"
        outsider = "server_seed_outsider_\(suffix)"
        password = "server-seed-\(suffix)"
        try cluster.createLogin(exporter, password: password, memberOf: "synchro_seed")
        try cluster.createLogin(outsider, password: password)
    }

    func source(login: String) throws -> PostgresExportSource {
        try PostgresExportSource(connectionString:
            "host=127.0.0.1 port=\(cluster.port) dbname=\(database) user=\(login) password=\(password)")
    }

    func httpExport(_ name: String) throws -> (path: String, report: SeedExportReport) {
        let path = directory.path(name)
        let source = try HTTPExportSource(baseURL: server.baseURL, operatorToken: RunningServer.operatorToken)
        return (path, try SeedExporter.export(from: source, to: path, options: .init(pageLimit: Self.pageLimit)))
    }

    /// The rows of a seed's application tables (every table not named with a leading underscore), as text.
    func rows(_ path: String) throws -> [String: [[SQLiteValue]]] {
        let db = try Connection(path: path, mode: .readOnly)
        defer { db.close() }
        let tables = try db.query(
            "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE '\\_%' ESCAPE '\\' ORDER BY name"
        ) { try $0.text(at: 0) }
        var contents: [String: [[SQLiteValue]]] = [:]
        for table in tables {
            contents[table] = try db.rows("SELECT * FROM \"\(table)\" ORDER BY rowid")
        }
        return contents
    }

    func rehearse(_ seed: String, on target: RunningServer? = nil) throws -> SeedFileRehearsal.Outcome {
        try SeedFileRehearsal.run(
            seed: seed,
            options: RehearsalOptions(
                server: (target ?? server).baseURL, credential: "secret-alice", pageLimit: 50, rebuildCompare: true),
            temporaryDirectory: directory.url.path)
    }

    func expectFailure(_ rule: String, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void) {
        do {
            try body()
            Issue.record("the export succeeded; expected \(rule)", sourceLocation: sourceLocation)
        } catch let error as SeedExportError {
            #expect(error.rule == rule, "\(error)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("unexpected \(error)", sourceLocation: sourceLocation)
        }
    }

    @Test("the SQL export is the HTTP export of the same data: rows, scope digests, and receipts both servers accept")
    func sameSeedAsHTTP() throws {
        let (httpSeed, httpReport) = try httpExport("http.db")
        let pgSeed = directory.path("pg.db")
        let pgReport = try SeedExporter.export(
            from: try source(login: exporter), to: pgSeed, options: .init(pageLimit: Self.pageLimit))
        #expect(pgReport.rows == httpReport.rows && pgReport.rows > 230)
        #expect(pgReport.schema == httpReport.schema)
        #expect(pgReport.scopes.map(\.id) == httpReport.scopes.map(\.id))
        #expect(pgReport.scopes.map(\.cardinality) == httpReport.scopes.map(\.cardinality))
        #expect(pgReport.scopes.map(\.checksum) == httpReport.scopes.map(\.checksum))
        #expect(pgReport.exportID != httpReport.exportID)
        let pg = try rows(pgSeed)
        let http = try rows(httpSeed)
        #expect(!http.isEmpty && pg.keys.sorted() == http.keys.sorted())
        for table in http.keys.sorted() {
            #expect(pg[table] == http[table], "table \(table) differs")
        }
        #expect(try SeedVerifier.verify(path: pgSeed).ok)
        for seed in [pgSeed, httpSeed] {
            let outcome = try rehearse(seed)
            #expect(outcome.install.verification.ok)
            #expect(outcome.rehearsal.passed, "\(seed)")
            #expect(outcome.rehearsal.scopes.allSatisfy { $0.continued && $0.verified && !$0.rebuilt })
            #expect(!outcome.rehearsal.firstSync.scopesRebuilt.contains("catalog"))
        }
        // A second server process on the same database accepts the SQL export's receipts too.
        let second = try RunningServer(sharing: server)
        let outcome = try rehearse(pgSeed, on: second)
        #expect(outcome.rehearsal.passed)
        #expect(outcome.rehearsal.scopes.allSatisfy { $0.continued && !$0.rebuilt })
    }

    @Test("after operator updates, every SQL page carries the HTTP export's exact record octets, with the new values")
    func storedRowsAgreeWithTheRows() throws {
        // Values whose JSON needs escapes, and non-ASCII text: the pages splice the stored canonical octets.
        let written: [(json: String, value: String)] = [
            (#"quote \" backslash \\ tab \t bell \u0007 é 😀 \u2028"#, "quote \" backslash \\ tab \t bell \u{07} é 😀 \u{2028}"),
            ("plain rename", "plain rename"),
        ]
        for (index, name) in written.enumerated() {
            let row = #"{"fld_category_id":\#(index + 1),"fld_category_name":"\#(name.json)"}"#
            _ = try server.engine.operatorWrite(
                table: "tbl_categories", pk: .number(JSONNumber(Int64(index + 1))), row: try StrictJSONParser().parse(row))
        }
        let http = RecordingSource(
            try HTTPExportSource(baseURL: server.baseURL, operatorToken: RunningServer.operatorToken))
        let sql = RecordingSource(try source(login: exporter))
        let httpReport = try SeedExporter.export(
            from: http, to: directory.path("http.db"), options: .init(pageLimit: Self.pageLimit))
        let sqlReport = try SeedExporter.export(
            from: sql, to: directory.path("pg.db"), options: .init(pageLimit: Self.pageLimit))
        #expect(sqlReport.scopes.map(\.checksum) == httpReport.scopes.map(\.checksum))
        let httpPages = http.pages.withLock { $0 }
        let sqlPages = sql.pages.withLock { $0 }
        #expect(sqlPages.count == httpPages.count && sqlPages.count > 3)
        for (sqlPage, httpPage) in zip(sqlPages, httpPages) {
            // Handed over as the function built it: the HTTP page's member order, not RFC 8785's.
            #expect(sqlPage.starts(with: Array(#"{"scope":"#.utf8)))
            #expect(!RecordingSource.records(sqlPage).isEmpty)
            #expect(RecordingSource.records(sqlPage) == RecordingSource.records(httpPage))
        }
        let values = try rows(directory.path("pg.db")).values.flatMap { $0 }.flatMap { $0 }
        for name in written {
            #expect(values.contains(.text(name.value)), "the written value is in the seed")
        }
    }

    @Test("writes committed while the export transaction is open stay out of it; the seed continues and pulls them")
    func writesDuringTheExport() throws {
        let pgSeed = directory.path("pg.db")
        let writing = WritingSource(try source(login: exporter), server: server)
        let before = try httpExport("before.db")
        let report = try SeedExporter.export(from: writing, to: pgSeed, options: .init(pageLimit: Self.pageLimit))
        #expect(writing.writes.withLock { $0 } > 4)
        // The snapshot is the one before the first write: the same rows and digests as an export made then.
        #expect(report.scopes.map(\.checksum) == before.report.scopes.map(\.checksum))
        #expect(try rows(pgSeed) == rows(before.path))
        let after = try httpExport("after.db")
        #expect(after.report.scopes.map(\.checksum) != report.scopes.map(\.checksum))
        let outcome = try rehearse(pgSeed)
        #expect(outcome.rehearsal.passed)
        #expect(outcome.rehearsal.firstSync.rowsApplied >= 1)
        #expect(outcome.rehearsal.scopes.allSatisfy { $0.continued && $0.matchesRebuild == true })
    }

    @Test("a live member whose projection row carries another digest, or is not live, fails its page: nothing published",
          arguments: [
              "UPDATE seedkit_server.projection SET row_digest = sha256('forged'::bytea)",
              "UPDATE seedkit_server.projection SET state = 1",
          ])
    func damagedProjectionRowFailsThePage(damage: String) throws {
        // A member in the middle of a page after the first: the page is chosen on membership, the row looked up.
        // (The server's own triggers on projection name its tables unqualified.)
        try cluster.execute("""
            DO $$ BEGIN
                PERFORM set_config('search_path', 'seedkit_server', true);
                \(damage) WHERE identity = (SELECT identity FROM seedkit_server.membership
                                           WHERE row_digest IS NOT NULL AND scope_id IN
                                               (SELECT scope_id FROM seedkit_server.shared_scopes WHERE portable)
                                           ORDER BY identity LIMIT 1 OFFSET 45);
            END $$
            """, database: database)
        let output = directory.path("damaged.db")
        #expect(throws: SeedExportError.self) {
            _ = try SeedExporter.exportWithEvidence(
                from: try source(login: exporter), to: output, options: .init(pageLimit: Self.pageLimit))
        }
        #expect(!FileManager.default.fileExists(atPath: output))
    }

    @Test("a login outside synchro_seed is not_seed_exporter; a dropped function is export_function_missing")
    func refusals() throws {
        let output = directory.path("pg.db")
        expectFailure("not_seed_exporter") {
            _ = try SeedExporter.exportWithEvidence(
                from: try source(login: outsider), to: output, options: .init(pageLimit: Self.pageLimit))
        }
        try cluster.execute(
            "DROP FUNCTION synchro.synchro_portable_seed_scope(text, text, text, bigint, integer)", database: database)
        expectFailure("export_function_missing") {
            _ = try SeedExporter.exportWithEvidence(
                from: try source(login: exporter), to: output, options: .init(pageLimit: Self.pageLimit))
        }
        #expect(!FileManager.default.fileExists(atPath: output))
    }
}
