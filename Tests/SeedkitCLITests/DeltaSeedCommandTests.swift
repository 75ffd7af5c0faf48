import Foundation
import Glibc
import SQLiteKit
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// A delta export as Synchro exports behave (issue #22): one export per destination (exit 5 naming the holder),
/// SIGINT/SIGTERM ending it with exit 130 and nothing left but the lock file, a kill at any page leaving no visible
/// file, and the evidence of a run killed before its seed recognised as an orphan so the re-run needs no `--force`;
/// then the seed packed, verified, installed, warmed and rehearsed with the built binary.
@Suite(.serialized) struct DeltaSeedCommandTests {
    let server: DeltaFixtureServer
    let directory: TemporaryDirectory
    let definition: String

    init() throws {
        server = try DeltaFixtureServer()
        directory = try TemporaryDirectory(prefix: "seedkit-delta-cmd")
        for index in 1...9 { server.upsertArticle("a\(index)", title: "Article \(index)") }
        server.deleteArticle("a4")
        for index in 1...5 { server.upsertUser("u\(index)", name: "User \(index)") }
        definition = try directory.write("source.json", Array(DeltaDefinitionFixture.text(baseURL: server.baseURL).utf8))
    }

    var arguments: [String] { ["export", "--source", "delta:" + definition, "--out", directory.path("seed.db")] }
    let environment = ["DELTA_TOKEN": DeltaFixtureServer.token]

    func run(_ words: [String], _ extra: [String: String] = [:]) throws -> SeedkitProcess.Outcome {
        try SeedkitProcess.run(words, environment: environment.merging(extra) { $1 })
    }

    func visible() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory.url.path)) ?? [])
            .filter { !$0.hasPrefix(".") && $0 != "source.json" && !$0.hasSuffix(".out") }.sorted()
    }

    @Test("SIGTERM or SIGINT during a delta export: exit 130, nothing published, no temporary",
          arguments: [("export.page:1", "TERM"), ("export.page:3", "INT")])
    func aSignalStopsTheExport(point: String, signal: String) throws {
        let outcome = try run(arguments, ["SEEDKIT_CRASH_AT": point, "SEEDKIT_CRASH_SIGNAL": signal])
        #expect(outcome.status == 130, "\(outcome.status): \(outcome.stderrText)")
        #expect(outcome.stderrText.contains("interrupted; nothing published"))
        let left = try FileManager.default.contentsOfDirectory(atPath: directory.url.path)
            .filter { !$0.hasSuffix(".lock") && $0 != "source.json" }
        #expect(left.isEmpty, "\(left)")
    }

    @Test(arguments: ["export.page:2", "export.verified", "export.published"])
    func aKillBeforePublicationLeavesNoVisibleFile(point: String) throws {
        let outcome = try run(arguments, ["SEEDKIT_CRASH_AT": point])
        #expect(outcome.status == SIGKILL)
        #expect(visible().isEmpty, "\(visible())")
        let again = try run(arguments)
        #expect(again.status == 0, "\(again.stderrText)")
        #expect(try run(["verify", directory.path("seed.db")]).status == 0)
    }

    /// The evidence is published before the seed: a kill between them leaves the delta evidence alone, and the next
    /// export recognises it as its own orphan and publishes both without `--force`.
    @Test func aKillBetweenEvidenceAndSeedIsRecoveredWithoutForce() throws {
        let outcome = try run(arguments, ["SEEDKIT_CRASH_AT": "export.evidence_published"])
        #expect(outcome.status == SIGKILL)
        #expect(visible() == ["seed.db.evidence.json"])
        let again = try run(arguments)
        #expect(again.status == 0, "\(again.stderrText)")
        let evidence = try StrictJSONParser().parse(
            Array(try #require(FileManager.default.contents(atPath: directory.path("seed.db.evidence.json")))))
        let seed = try #require(FileManager.default.contents(atPath: directory.path("seed.db")))
        #expect(evidence.objectValue?["artifact"]?.objectValue?["sha256"]?.stringValue
            == Hex.encode(SHA256.hash(Array(seed))))
    }

    @Test func aForeignFileAtTheEvidencePathIsStillRefused() throws {
        let foreign = Data("{\"format\":\"seedkit-delta-evidence/1\",\"artifact\":{\"name\":\"other.db\"}}\n".utf8)
        try foreign.write(to: URL(fileURLWithPath: directory.path("seed.db.evidence.json")))
        let refused = try run(arguments)
        #expect(refused.status == 2)
        #expect(refused.stderrText.contains("evidence_exists"), "\(refused.stderrText)")
        #expect(FileManager.default.contents(atPath: directory.path("seed.db.evidence.json")) == foreign)
    }

    @Test func aSecondExportToAHeldDestinationExitsFiveNamingTheHolder() throws {
        let first = try StoppedChild(
            arguments, environment: environment.merging(
                ["SEEDKIT_CRASH_AT": "export.page:2", "SEEDKIT_CRASH_SIGNAL": "STOP"]) { $1 },
            output: directory.path("first.out"))
        defer { first.kill() }
        try first.waitUntilStopped()
        let second = try run(arguments + ["--json"])
        #expect(second.status == 5, "\(second.status): \(second.stderrText)")
        let error = try StrictJSONParser().parse(second.stdout).objectValue?["error"]?.objectValue
        #expect(error?["rule"]?.stringValue == "locked")
        #expect(error?["exit_status"]?.numberValue?.exactInt64 == 5)
        #expect(error?["message"]?.stringValue?.contains("process \(first.pid)") == true)
        #expect(try first.continueAndWait() == 0)
        #expect(try run(["verify", directory.path("seed.db")]).status == 0)
    }

    @Test func packVerifyInstallWarmAndRehearseADeltaSeed() throws {
        #expect(try run(arguments).status == 0)
        let pack = try run(["pack", directory.path("seed.db")])
        #expect(pack.status == 0, "\(pack.stderrText)")
        let verified = try run(["verify", directory.path("seed.db.zst"), "--json"])
        #expect(verified.stdoutText == "{\"findings\":[],\"kind\":\"delta\",\"ok\":true}\n", "\(verified.stderrText)")

        server.upsertArticle("a10", title: "After the export")
        server.deleteArticle("a1")
        let app = directory.path("app.db")
        let install = try run(["install", directory.path("seed.db.zst"), "--to", app, "--json"])
        #expect(install.status == 0, "\(install.stdoutText)\(install.stderrText)")
        #expect(install.stdoutText.contains("\"kind\":\"delta\""))
        let again = try run(["install", directory.path("seed.db.zst"), "--to", app])
        #expect(again.status == 2)

        let warm = try run(["warm", "--source", "delta:" + definition, "--db", app, "--json"])
        #expect(warm.status == 0, "\(warm.stderrText)")
        let connection = try Connection(path: app, mode: .readOnly)
        #expect(try connection.rows("SELECT id FROM articles ORDER BY id").map { $0[0].textValue ?? "" }
            == ["a10", "a2", "a3", "a5", "a6", "a7", "a8", "a9"])
        connection.close()

        let rehearse = try run(["rehearse", directory.path("seed.db.zst"), "--source", "delta:" + definition, "--json"])
        #expect(rehearse.status == 0, "\(rehearse.stdoutText)\(rehearse.stderrText)")
        let report = try StrictJSONParser().parse(rehearse.stdout).objectValue
        #expect(report?["passed"]?.boolValue == true)
        #expect(report?["differences"]?.arrayValue?.isEmpty == true)
        #expect(!(rehearse.stdoutText + warm.stdoutText + install.stdoutText).contains(DeltaFixtureServer.token))

        server.rewriteArticleWithoutRevision("a6", title: "Behind the revision")
        let differs = try run(["rehearse", directory.path("seed.db"), "--source", "delta:" + definition])
        #expect(differs.status == 1)
        #expect(differs.stdoutText.contains("DIFF values_differ (entity articles, key \"a6\")"), "\(differs.stdoutText)")
        #expect(!differs.stdoutText.contains("Behind the revision"))
    }

    /// A kill after the install's verification leaves nothing at the destination; a kill in the middle of a warm
    /// keeps its applied pages, and the next warm ends where an uninterrupted one would.
    @Test func killsDuringInstallAndWarmLeaveACommittedState() throws {
        #expect(try run(arguments).status == 0)
        let app = directory.path("app.db")
        let killed = try run(["install", directory.path("seed.db"), "--to", app], ["SEEDKIT_CRASH_AT": "install.verified"])
        #expect(killed.status == SIGKILL)
        #expect(!FileManager.default.fileExists(atPath: app))
        #expect(try run(["install", directory.path("seed.db"), "--to", app]).status == 0)

        for index in 20...29 { server.upsertArticle("a\(index)", title: "Later \(index)") }
        let warmWords = ["warm", "--source", "delta:" + definition, "--db", app]
        let cut = try run(warmWords, ["SEEDKIT_CRASH_AT": "warm.page:2"])
        #expect(cut.status == SIGKILL)
        let connection = try Connection(path: app, mode: .readOnly)
        #expect(try connection.scalar("SELECT count(*) FROM articles")?.integerValue == 14)
        connection.close()
        #expect(try run(warmWords).status == 0)
        #expect(try run(["verify", app]).status == 0)
        let done = try Connection(path: app, mode: .readOnly)
        #expect(try done.scalar("SELECT count(*) FROM articles")?.integerValue == 18)
        done.close()
    }
}

/// `seedkit serve --protocol delta` as a user runs it: its address first, a delta export against it that verifies,
/// the admin fault route, and exit 0 on SIGTERM.
@Suite struct DeltaServeCommandTests {
    @Test func serveProtocolDeltaAnswersAnExportAndStops() throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-delta-serve")
        let process = Process()
        process.executableURL = SeedkitProcess.executable
        process.arguments = ["serve", "--protocol", "delta", "--entities", "rows", "--rows", "2500",
                             "--store", directory.path("store.db"), "--listen", "127.0.0.1:0", "--token-env", "SERVE_T"]
        process.environment = ["SERVE_T": "serve-token"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = Pipe()
        try process.run()
        defer { if process.isRunning { process.terminate(); process.waitUntilExit() } }
        let line = ServeCommandTests.firstLine(of: output)
        #expect(line.hasPrefix("listening on http://127.0.0.1:"))
        let base = String(line.dropFirst("listening on ".count))
        let definition = try directory.write("source.json", Array("""
            {"format": "seedkit-delta-source/1", "base_url": "\(base)", "auth": {"bearer_env": "SERVE_T"},
             "entities": [{"name": "rows", "table": "rows", "primary_key": "id",
               "columns": [{"name": "id", "type": "string"}, {"name": "title", "type": "string"},
                           {"name": "words", "type": "int64"}],
               "paging": {"shape": "changes", "path": "/v1/sync/rows", "limit": 1000}}]}
            """.utf8))
        let environment = ["SERVE_T": "serve-token"]
        let exported = try SeedkitProcess.run(
            ["export", "--source", "delta:" + definition, "--out", directory.path("seed.db"), "--json"],
            environment: environment)
        #expect(exported.status == 0, "\(exported.stderrText)")
        let entity = try StrictJSONParser().parse(exported.stdout).objectValue?["entities"]?.arrayValue?.first?.objectValue
        #expect(entity?["rows"]?.numberValue?.exactInt64 == 2500)
        #expect(entity?["pages"]?.numberValue?.exactInt64 == 3)
        #expect(try SeedkitProcess.run(["verify", directory.path("seed.db")]).status == 0)
        process.terminate()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
    }
}
