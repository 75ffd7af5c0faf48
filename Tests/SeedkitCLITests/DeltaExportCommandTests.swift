import Foundation
import SQLiteKit
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// `seedkit export --source delta:FILE.json` as a user runs it: the built binary against the fixture delta-sync API
/// on loopback, the bearer token from the variable the definition names and never printed.
@Suite struct DeltaExportCommandTests {
    let server: DeltaFixtureServer
    let directory: TemporaryDirectory

    init() throws {
        server = try DeltaFixtureServer()
        directory = try TemporaryDirectory(prefix: "seedkit-delta-cli")
        for index in 1...5 { server.upsertArticle("a\(index)", title: "Article \(index)") }
        server.deleteArticle("a4")
        for index in 1...5 { server.upsertUser("u\(index)", name: "User \(index)") }
    }

    func export(_ definition: String, token: String?, _ extra: [String] = []) throws -> SeedkitProcess.Outcome {
        let path = try directory.write("source.json", Array(definition.utf8))
        return try SeedkitProcess.run(
            ["export", "--source", "delta:" + path, "--out", directory.path("seed.db")] + extra,
            environment: ["DELTA_TOKEN": token ?? ""])
    }

    @Test func exportsAndNeverPrintsTheToken() throws {
        let definition = DeltaDefinitionFixture.text(baseURL: server.baseURL)
        let missing = try export(definition, token: nil)
        #expect(missing.status == 2)
        #expect(missing.stderrText.contains("DELTA_TOKEN"))

        let refused = try export(definition, token: "wrong-token-value", ["--json"])
        #expect(refused.status == 1)
        let error = try StrictJSONParser().parse(refused.stdout).objectValue?["error"]?.objectValue
        #expect(error?["rule"]?.stringValue == "http_status")
        // The one failure contract: the exit status in the JSON error, the rule in the text on standard error.
        #expect(error?["exit_status"]?.numberValue?.exactInt64 == 1)
        #expect(refused.stderrText.contains("(http_status)"), "\(refused.stderrText)")
        #expect(!(refused.stdoutText + refused.stderrText).contains("wrong-token-value"))
        #expect(!FileManager.default.fileExists(atPath: directory.path("seed.db")))

        let outcome = try export(definition, token: DeltaFixtureServer.token, ["--verbose"])
        #expect(outcome.status == 0, "\(outcome.stderrText)")
        #expect(outcome.stdoutText.contains("exported 9 rows of 2 entity type(s)"))
        #expect(outcome.stdoutText.contains(
            "users → app_users: 5 rows, 3 page(s), an app would need 2 sync sessions"))
        #expect(!(outcome.stdoutText + outcome.stderrText).contains(DeltaFixtureServer.token))
        let connection = try Connection(path: directory.path("seed.db"), mode: .readOnly)
        #expect(try connection.scalar("SELECT count(*) FROM articles")?.integerValue == 4)
        connection.close()
        #expect(FileManager.default.fileExists(atPath: directory.path("seed.db.evidence.json")))

        let verified = try SeedkitProcess.run(["verify", directory.path("seed.db"), "--json"])
        #expect(verified.status == 0, "\(verified.stdoutText)")
        #expect(verified.stdoutText == "{\"findings\":[],\"kind\":\"delta\",\"ok\":true}\n")
        let writable = try Connection(path: directory.path("seed.db"))
        try writable.execute("DELETE FROM app_users WHERE id = 'u2'")
        writable.close()
        let tampered = try SeedkitProcess.run(["verify", directory.path("seed.db")])
        #expect(tampered.status == 1)
        #expect(tampered.stdoutText.contains("FAIL row_count (entity users)"))
        #expect(tampered.stdoutText.contains("FAIL digest (entity users)"))

        let again = try export(definition, token: DeltaFixtureServer.token)
        #expect(again.status == 2)
        #expect(again.stderrText.contains("output_exists"))
    }

    @Test func aBadDefinitionNamesItsMember() throws {
        let definition = DeltaDefinitionFixture.text(baseURL: server.baseURL, template: "since={since}&page={page}")
        let outcome = try export(definition, token: DeltaFixtureServer.token, ["--json"])
        #expect(outcome.status == 2)
        let error = try StrictJSONParser().parse(outcome.stdout).objectValue?["error"]?.objectValue
        #expect(error?["rule"]?.stringValue == "unknown_token")
        #expect(error?["message"]?.stringValue?.contains("entities[1].paging.list_query_template") == true)
        #expect(server.queries.isEmpty)
    }
}
