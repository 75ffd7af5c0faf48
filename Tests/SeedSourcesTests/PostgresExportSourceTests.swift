import Foundation
import PostgresKit
import SQLiteKit
import SeedArtifacts
import SeedSources
import Synchronization
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// Terminates the export's backend from a second connection just before page call `victimCall` (1-based), and
/// waits until it is gone (`pg_terminate_backend` with a timeout), so the next call meets a dead connection.
final class TerminatingSource: SeedExportSource {
    private let base: PostgresExportSource
    private let replay: SeedExportReplay
    private let victimCall: Int
    private let calls = Mutex(0)

    init(_ base: PostgresExportSource, replay: SeedExportReplay, victimCall: Int) {
        self.base = base
        self.replay = replay
        self.victimCall = victimCall
    }

    func schemaManifest() throws(SeedExportError) -> [UInt8] { try base.schemaManifest() }
    func exportManifest(pageLimit: Int64) throws(SeedExportError) -> [UInt8] {
        try base.exportManifest(pageLimit: pageLimit)
    }
    func finish() throws(SeedExportError) { try base.finish() }

    func scopePage(_ request: SeedPageRequest) throws(SeedExportError) -> [UInt8] {
        let call = calls.withLock { count in
            count += 1
            return count
        }
        if call == victimCall {
            let terminated = try? replay.superuser().execute(
                "SELECT pg_terminate_backend($1::int, 10000)", [String(base.backendPID)]).scalar
            #expect(terminated == "t")
        }
        return try base.scopePage(request)
    }
}

@Suite("PostgreSQL export source: upstream's functions, replayed from a real export", .serialized)
struct PostgresExportSourceTests {
    let cluster: PostgresCluster
    let server: RunningServer
    let directory: TemporaryDirectory
    static let pageLimit: Int64 = 50

    init() throws {
        cluster = try PostgresCluster.shared()
        server = try RunningServer(rows: 230)
        directory = try TemporaryDirectory(prefix: "seedkit-pg-export")
    }

    /// An HTTP export of the reference server, recorded, and a replay of it in PostgreSQL.
    func recordedExport() throws -> (httpSeed: String, replay: SeedExportReplay) {
        let recorder = ExportRecorder(
            try HTTPExportSource(baseURL: server.baseURL, operatorToken: RunningServer.operatorToken))
        let httpSeed = directory.path("http.db")
        _ = try SeedExporter.export(from: recorder, to: httpSeed, options: .init(pageLimit: Self.pageLimit))
        #expect(recorder.recording.pages.count > 4)
        return (httpSeed, try SeedExportReplay(cluster: cluster, recording: recorder.recording))
    }

    func source(_ replay: SeedExportReplay, login: String? = nil) throws -> PostgresExportSource {
        try PostgresExportSource(connectionString: replay.keyValue(login: login ?? replay.exporter))
    }

    /// Every table of a seed, every row in rowid order, as text.
    func contents(_ path: String) throws -> [String: [[SQLiteValue]]] {
        let db = try Connection(path: path, mode: .readOnly)
        defer { db.close() }
        let tables = try db.query("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name") {
            try $0.text(at: 0)
        }
        var contents: [String: [[SQLiteValue]]] = [:]
        for table in tables {
            contents[table] = try db.rows("SELECT * FROM \"\(table)\" ORDER BY rowid")
        }
        return contents
    }

    /// Nothing at all was left in the output directory but the HTTP seed.
    func expectNothingPublished(_ output: String) throws {
        #expect(!FileManager.default.fileExists(atPath: output))
        let entries = try FileManager.default.contentsOfDirectory(atPath: directory.url.path).sorted()
        #expect(entries == ["http.db"])
    }

    func expectFailure(
        _ rule: String, _ body: () throws -> Void, sourceLocation: SourceLocation = #_sourceLocation
    ) -> SeedExportError? {
        do {
            try body()
            Issue.record("the export succeeded; expected \(rule)", sourceLocation: sourceLocation)
            return nil
        } catch let error as SeedExportError {
            #expect(error.rule == rule, "\(error)", sourceLocation: sourceLocation)
            return error
        } catch {
            Issue.record("unexpected \(error)", sourceLocation: sourceLocation)
            return nil
        }
    }

    @Test("the export from PostgreSQL is the HTTP export, row for row, digest for digest, receipt for receipt")
    func sameSeedAsHTTP() throws {
        let (httpSeed, replay) = try recordedExport()
        let output = directory.path("pg.db")
        let source = try source(replay)
        #expect(source.target == "127.0.0.1:\(cluster.port)/\(replay.database) as \(replay.exporter)")
        let report = try SeedExporter.export(from: source, to: output, options: .init(pageLimit: Self.pageLimit))
        #expect(report.rows > 230)
        let pg = try contents(output)
        let http = try contents(httpSeed)
        #expect(pg.keys.sorted() == http.keys.sorted())
        for table in http.keys.sorted() {
            #expect(pg[table] == http[table], "table \(table) differs")
        }
        #expect(try SeedVerifier.verify(path: output).ok)
        let installed = try SeedInstaller.install(seed: output, to: directory.path("app.db"))
        #expect(installed.verification.ok)
        // The transaction was committed: the connection is idle, ready for another export.
        #expect(try source.schemaManifest().isEmpty == false)
        try source.finish()
    }

    @Test("the fixture checks the transaction as upstream does: outside the snapshot the manifest call raises XX000")
    func transactionModeIsChecked() throws {
        let (_, replay) = try recordedExport()
        let connection = try replay.superuser()
        let error = try #require(throws: PostgresError.self) {
            try connection.execute("SELECT synchro.synchro_portable_seed_manifest(50)")
        }
        #expect(error.sqlState == "XX000")
        #expect("\(error)".contains("portable seed transaction is invalid"))
        let page = try connection.execute("SELECT synchro.synchro_portable_seed_scope('catalog', 't', 'r', 0, 50)")
        #expect(page.scalar?.contains("portable seed export transaction is unavailable") == true)
        let limit = try connection.transaction(.snapshotExport) {
            try $0.execute("SELECT synchro.synchro_portable_seed_manifest(1001)").scalar
        }
        #expect(limit?.contains("portable seed limit must be between 1 and 1000") == true)
    }

    @Test("a login that is not a member of synchro_seed is refused by name (42501), and nothing is published")
    func loginWithoutSeedRole() throws {
        let (_, replay) = try recordedExport()
        let output = directory.path("pg.db")
        let source = try source(replay, login: replay.outsider)
        let error = expectFailure("not_seed_exporter") {
            _ = try SeedExporter.exportWithEvidence(from: source, to: output, options: .init(pageLimit: Self.pageLimit))
        }
        #expect(error.map { "\($0)" }?.contains("GRANT synchro_seed") == true)
        try expectNothingPublished(output)
    }

    @Test("a dropped export function is export_function_missing naming it, and nothing is published")
    func droppedFunction() throws {
        let (_, replay) = try recordedExport()
        try replay.dropPageFunction()
        let output = directory.path("pg.db")
        let error = expectFailure("export_function_missing") {
            _ = try SeedExporter.exportWithEvidence(
                from: try source(replay), to: output, options: .init(pageLimit: Self.pageLimit))
        }
        #expect(error.map { "\($0)" }?.contains("synchro.synchro_portable_seed_scope(text,text,text,bigint,integer)")
            == true)
        try expectNothingPublished(output)
    }

    @Test("an installed synchro_pg outside the 0.4 series is refused before any call; 0.4.x is accepted")
    func extensionVersion() throws {
        let (_, replay) = try recordedExport()
        try replay.claimExtension(version: "0.5.0")
        let error = try #require(throws: SeedExportError.self) { try source(replay) }
        #expect(error.rule == "extension_version_unsupported")
        #expect("\(error)".contains("0.5.0"))
        let admin = try replay.superuser()
        try admin.execute("SET allow_system_table_mods = on")
        try admin.execute("UPDATE pg_catalog.pg_extension SET extversion = '0.4.1' WHERE extname = 'synchro_pg'")
        let output = directory.path("pg.db")
        _ = try SeedExporter.export(from: try source(replay), to: output, options: .init(pageLimit: Self.pageLimit))
        #expect(FileManager.default.fileExists(atPath: output))
    }

    @Test("a backend terminated between pages is connection_lost, and nothing is published")
    func terminatedMidExport() throws {
        let (_, replay) = try recordedExport()
        let output = directory.path("pg.db")
        let source = TerminatingSource(try source(replay), replay: replay, victimCall: 3)
        _ = expectFailure("connection_lost") {
            _ = try SeedExporter.exportWithEvidence(from: source, to: output, options: .init(pageLimit: Self.pageLimit))
        }
        try expectNothingPublished(output)
    }

    @Test("serialization failures rerun the whole transaction after growing delays, then the export succeeds")
    func serializationFailureRetried() throws {
        let (httpSeed, replay) = try recordedExport()
        try replay.failSerialization(times: 2)
        let output = directory.path("pg.db")
        let policy = SerializationRetryPolicy(attempts: 4, firstDelay: .milliseconds(100), maximumDelay: .seconds(1))
        let sleeps = Mutex<[Duration]>([])
        let source = try source(replay)
        let record: (Duration) -> Void = { delay in sleeps.withLock { $0.append(delay) } }
        _ = try source.withRetries(policy, sleep: record) { (source) throws(SeedExportError) in
            try SeedExporter.export(from: source, to: output, options: .init(pageLimit: Self.pageLimit))
        }
        #expect(sleeps.withLock { $0 } == [.milliseconds(100), .milliseconds(200)])
        #expect(try contents(output) == (try contents(httpSeed)))
    }

    @Test("serialization failures beyond the policy are retries_exhausted, and nothing is published")
    func serializationRetriesExhausted() throws {
        let (_, replay) = try recordedExport()
        try replay.failSerialization(times: 100)
        let output = directory.path("pg.db")
        let policy = SerializationRetryPolicy(
            attempts: 3, firstDelay: .milliseconds(100), maximumDelay: .milliseconds(150))
        let sleeps = Mutex<[Duration]>([])
        let source = try source(replay)
        let error = expectFailure("retries_exhausted") {
            let record: (Duration) -> Void = { delay in sleeps.withLock { $0.append(delay) } }
            _ = try source.withRetries(policy, sleep: record) { (source) throws(SeedExportError) in
                try SeedExporter.exportWithEvidence(from: source, to: output, options: .init(pageLimit: Self.pageLimit))
            }
        }
        #expect(error.map { "\($0)" }?.contains("3 attempts") == true)
        #expect(sleeps.withLock { $0 } == [.milliseconds(100), .milliseconds(150)])
        try expectNothingPublished(output)
    }

    @Test("a wrong password is authentication_failed, naming the target and never the password")
    func wrongPassword() throws {
        let (_, replay) = try recordedExport()
        let secret = "wrong-\(UUID().uuidString)"
        let error = try #require(throws: SeedExportError.self) {
            try PostgresExportSource(connectionString: replay.keyValue(login: replay.exporter, password: secret))
        }
        #expect(error.rule == "authentication_failed")
        #expect(!"\(error)".contains(secret))
        #expect(!"\(error)".contains(replay.password))
        #expect("\(error)".contains("127.0.0.1:\(cluster.port)"))
        let malformed = try #require(throws: SeedExportError.self) {
            try PostgresExportSource(connectionString: "host=127.0.0.1 password=\(secret) dbname")
        }
        #expect(malformed.rule == "invalid_source")
        #expect(!"\(malformed)".contains(secret))
    }

    @Test("a page or receipt that does not verify stops the export by its rule, and nothing is published")
    func tamperedReplay() throws {
        let (_, replay) = try recordedExport()
        let connection = try replay.superuser()
        // A row's recorded checksum no longer matches its row.
        try connection.execute("""
            UPDATE synchro_replay.pages SET body = jsonb_set(body, '{records,0,row_checksum,digest}',
                to_jsonb(repeat('0', 64)))
            WHERE expected_row_ordinal = 0
            """)
        let output = directory.path("pg.db")
        let error = try #require(throws: SeedExportError.self) {
            _ = try SeedExporter.export(from: try source(replay), to: output, options: .init(pageLimit: Self.pageLimit))
        }
        guard case .record(_, let ordinal, _, _) = error else {
            Issue.record("expected a record error, got \(error)")
            return
        }
        #expect(ordinal == 0)
        try expectNothingPublished(output)
    }
}
