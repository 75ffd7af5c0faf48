import Foundation
import SeedArtifacts
import SeedSources
import SQLiteKit
import Synchronization
import SynchroHTTP
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// A delta seed after its export (issue #22): a lost response and a cancellation end the export with nothing
/// published; pack, verify of the packed seed, install (verified, never replacing), warm from the checkpoints
/// (resumable per page) and the rehearsal against a full pull — all against the fixture API on loopback.
@Suite struct DeltaSeedLifecycleTests {
    let server: DeltaFixtureServer
    let directory: TemporaryDirectory

    init() throws {
        server = try DeltaFixtureServer()
        directory = try TemporaryDirectory(prefix: "seedkit-delta-life")
        for index in 1...7 { server.upsertArticle("a\(index)", title: "Article \(index)", words: Int64(index)) }
        server.deleteArticle("a5")
        for index in 1...5 { server.upsertUser("u\(index)", name: "User \(index)") }
    }

    func definition() throws -> DeltaSourceDefinition {
        try DeltaSourceDefinition(bytes: Array(DeltaDefinitionFixture.text(baseURL: server.baseURL).utf8))
    }

    func export(_ name: String = "seed.db", transport: (any HTTPTransport)? = nil,
                options: DeltaExportOptions = DeltaExportOptions()) throws(DeltaSourceError) -> DeltaExportReport {
        let definition: DeltaSourceDefinition
        do { definition = try self.definition() } catch { throw .definition(member: "fixture", rule: "\(error)") }
        if let transport {
            return try DeltaExporter.export(
                definition: definition, transport: transport, bearerToken: DeltaFixtureServer.token,
                to: directory.path(name), options: options)
        }
        return try DeltaExporter.export(
            definition: definition, bearerToken: DeltaFixtureServer.token, to: directory.path(name), options: options)
    }

    func files() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory.url.path)) ?? []).sorted()
    }

    func rows(_ path: String, _ sql: String) throws -> [[SQLiteValue]] {
        let connection = try Connection(path: path, mode: .readOnly)
        defer { connection.close() }
        return try connection.rows(sql)
    }

    /// The server handles the third request (its page is computed) but its answer never arrives: the export
    /// ends with `network_failure` (its network kind) naming no cursor, nothing is published, and a plain re-run publishes.
    @Test func aLostResponseEndsTheExportAndARerunPublishes() throws {
        let transport = LosingTransport(
            base: try CurlTransport(configuration: .init(baseURL: server.baseURL)), losing: 3)
        do {
            _ = try export(transport: transport)
            Issue.record("the export succeeded")
        } catch {
            #expect(error.rule == "network_failure")
            #expect(!error.description.contains("since="))
        }
        #expect(server.queries.count == 3)
        #expect(files().isEmpty, "\(files())")
        let report = try export()
        #expect(DeltaExporter.verify(path: report.path).isEmpty)
    }

    /// A cancellation is seen before the next request: `interrupted`, no seed, no evidence, no temporary file.
    @Test func anInterruptionEndsTheExportBeforeItsNextRequest() throws {
        let asked = Atomic<Int>(0)
        do {
            _ = try export(options: DeltaExportOptions(isInterrupted: { asked.add(1, ordering: .relaxed).newValue > 2 }))
            Issue.record("the export succeeded")
        } catch {
            #expect(error.rule == "interrupted")
        }
        #expect(server.queries.count == 2)
        #expect(files().isEmpty, "\(files())")
    }

    @Test func aPackedSeedVerifiesInstallsWarmsAndRehearses() throws {
        let report = try export()
        let packed = directory.path("seed.db.zst")
        _ = try SeedPacker.pack(report.path, to: packed)
        #expect(DeltaExporter.isDeltaSeed(path: packed))
        #expect(DeltaExporter.verify(path: packed).isEmpty)

        // Writes after the export: the installed copy is behind until it is warmed.
        server.upsertArticle("a8", title: "After the export")
        server.deleteArticle("a2")
        server.upsertArticle("a3", title: "Article 3, edited")
        server.upsertUser("u6", name: "User 6")
        server.deleteUser("u1")
        let app = directory.path("app.db")
        let installed = try DeltaSeedInstaller.install(seed: packed, to: app)
        #expect(installed.entities.map(\.rows) == [6, 5])
        #expect(try rows(app, "SELECT count(*) FROM articles").first?.first?.integerValue == 6)

        let warm = try DeltaWarm.warm(definition: try definition(), bearerToken: DeltaFixtureServer.token, database: app)
        #expect(warm.entities.map(\.rows) == [6, 5])
        #expect(try rows(app, "SELECT id FROM articles ORDER BY id").map { $0[0].textValue ?? "" }
            == ["a1", "a3", "a4", "a6", "a7", "a8"])
        #expect(try rows(app, "SELECT title FROM articles WHERE id = 'a3'").first?.first?.textValue
            == "Article 3, edited")
        #expect(try rows(app, "SELECT id FROM app_users ORDER BY id").map { $0[0].textValue ?? "" }
            == ["u2", "u3", "u4", "u5", "u6"])
        #expect(DeltaExporter.verify(path: app).isEmpty, "a warmed database still verifies")

        let rehearsal = try DeltaRehearsal.run(
            seed: packed, definition: try definition(), bearerToken: DeltaFixtureServer.token,
            temporaryDirectory: directory.url.path)
        #expect(rehearsal.passed, "\(rehearsal.differences)")
        #expect(rehearsal.entities.map(\.warmedRows) == rehearsal.entities.map(\.fullRows))
        #expect(rehearsal.entities.first?.warmPages ?? 0 >= 1)
    }

    /// A write that bypasses the revision is invisible from the checkpoint and visible from zero: the rehearsal
    /// names the row by its key, and nothing else.
    @Test func theRehearsalListsTheRowsThatDifferByKey() throws {
        let report = try export()
        server.rewriteArticleWithoutRevision("a4", title: "Changed behind the revision")
        let rehearsal = try DeltaRehearsal.run(
            seed: report.path, definition: try definition(), bearerToken: DeltaFixtureServer.token,
            temporaryDirectory: directory.url.path)
        #expect(!rehearsal.passed)
        #expect(rehearsal.differences.map { "\($0.entity) \($0.key) \($0.kind.rawValue)" }
            == ["articles \"a4\" values_differ"])
    }

    @Test func installRefusesAnExistingDatabaseAndATamperedSeed() throws {
        let report = try export()
        let app = try directory.write("app.db", [1, 2, 3])
        #expect(throws: DeltaInstallError.self) { try DeltaSeedInstaller.install(seed: report.path, to: app) }
        #expect(FileManager.default.contents(atPath: app) == Data([1, 2, 3]))

        let writable = try Connection(path: report.path)
        try writable.execute("UPDATE articles SET title = 'edited' WHERE id = 'a1'")
        writable.close()
        do {
            _ = try DeltaSeedInstaller.install(seed: report.path, to: directory.path("other.db"))
            Issue.record("a tampered seed was installed")
        } catch {
            #expect(error.rule == "seed_rejected")
            #expect(error.description.contains("digest:articles"))
        }
        #expect(files().filter { $0.contains("other.db") }.isEmpty, "\(files())")
    }

    /// A warm stopped after its first page keeps that page with its checkpoint; the next warm resumes from there
    /// and ends where a warm without interruption would.
    @Test func anInterruptedWarmResumesFromItsLastAppliedPage() throws {
        let report = try export()
        for index in 10...17 { server.upsertArticle("a\(index)", title: "Later \(index)") }
        let app = directory.path("app.db")
        _ = try DeltaSeedInstaller.install(seed: report.path, to: app)
        let before = try rows(app, "SELECT cursor FROM _delta_checkpoints WHERE entity = 'articles'")
        let asked = Atomic<Int>(0)
        do {
            _ = try DeltaWarm.warm(
                definition: try definition(), bearerToken: DeltaFixtureServer.token, database: app,
                options: DeltaExportOptions(isInterrupted: { asked.add(1, ordering: .relaxed).newValue > 1 }))
            Issue.record("the warm was not interrupted")
        } catch let error as DeltaSourceError {
            #expect(error.rule == "interrupted")
        }
        let after = try rows(app, "SELECT cursor FROM _delta_checkpoints WHERE entity = 'articles'")
        #expect(Int(after.first?.first?.textValue ?? "") ?? 0 == (Int(before.first?.first?.textValue ?? "") ?? 0) + 3)
        let warm = try DeltaWarm.warm(definition: try definition(), bearerToken: DeltaFixtureServer.token, database: app)
        #expect(warm.entities.first?.rows == 14)
        #expect(DeltaExporter.verify(path: app).isEmpty)
    }

    @Test func aWarmWithAnotherDefinitionIsRefusedBeforeAnyRequest() throws {
        let report = try export()
        let app = directory.path("app.db")
        _ = try DeltaSeedInstaller.install(seed: report.path, to: app)
        let requests = server.queries.count
        let other = DeltaDefinitionFixture.text(baseURL: server.baseURL)
            .replacingOccurrences(of: "\"table\": \"app_users\"", with: "\"table\": \"people\"")
        do {
            _ = try DeltaWarm.warm(
                definition: try DeltaSourceDefinition(bytes: Array(other.utf8)), bearerToken: DeltaFixtureServer.token,
                database: app)
            Issue.record("the warm ran")
        } catch {
            #expect(error.rule == "definition_mismatch")
        }
        #expect(server.queries.count == requests)
    }
}

/// Forwards every request to `base`, but on the `losing`-th drops the answer after the server produced it (a
/// connection reset after the request was handled).
final class LosingTransport: HTTPTransport, @unchecked Sendable {
    let base: any HTTPTransport
    let losing: Int
    private let count = Mutex(0)

    init(base: any HTTPTransport, losing: Int) {
        self.base = base
        self.losing = losing
    }

    func send(_ request: TransportRequest) throws(TransportError) -> TransportResponse {
        let response = try base.send(request)
        let index = count.withLock { value in
            value += 1
            return value
        }
        if index == losing { throw TransportError.other(code: 56) }
        return response
    }
}
