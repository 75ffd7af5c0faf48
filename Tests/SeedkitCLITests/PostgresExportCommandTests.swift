import Foundation
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// `seedkit export --source postgresql://…` as a user runs it: the built binary against upstream's functions in a
/// real PostgreSQL (the replay fixture of a reference-server export), the password from `PGPASSWORD` or the
/// key/value string and never printed.
@Suite(.serialized) struct PostgresExportCommandTests {
    let replay: SeedExportReplay
    let directory: TemporaryDirectory

    init() throws {
        let server = try RunningServer(rows: 150)
        replay = try SeedExportReplay(
            cluster: try PostgresCluster.shared(), recording: try ExportRecording.record(from: server, pageLimit: 40))
        directory = try TemporaryDirectory(prefix: "seedkit-pg-export-cli")
    }

    func export(_ source: String, password: String?, _ extra: [String] = []) throws -> SeedkitProcess.Outcome {
        try SeedkitProcess.run(
            ["export", "--source", source, "--out", directory.path("seed.db"), "--page-limit", "40"] + extra,
            environment: ["PGPASSWORD": password ?? "", "SEEDKIT_OPERATOR_TOKEN": ""])
    }

    @Test func exportsFromPostgreSQLAndNeverPrintsThePassword() throws {
        let wrong = "wrong-\(UUID().uuidString)"
        let refused = try export(replay.uri(login: replay.exporter), password: wrong, ["--verbose"])
        #expect(refused.status == 1, "\(refused.stderrText)")
        #expect(refused.stderrText.contains("refused the credentials"))
        #expect(!(refused.stderrText + refused.stdoutText).contains(wrong))
        #expect(!FileManager.default.fileExists(atPath: directory.path("seed.db")))

        let outsider = try export(replay.keyValue(login: replay.outsider), password: nil, ["--json"])
        #expect(outsider.status == 1)
        let error = try StrictJSONParser().parse(outsider.stdout).objectValue?["error"]?.objectValue
        #expect(error?["rule"]?.stringValue == "not_seed_exporter")
        #expect(!(outsider.stderrText + outsider.stdoutText).contains(replay.password))
        #expect(!FileManager.default.fileExists(atPath: directory.path("seed.db")))

        let outcome = try export(replay.uri(login: replay.exporter), password: replay.password, ["--json", "--verbose"])
        #expect(outcome.status == 0, "\(outcome.stderrText)")
        let json = try StrictJSONParser().parse(outcome.stdout)
        #expect((json.objectValue?["rows"]?.numberValue?.exactInt64 ?? 0) > 150)
        #expect(outcome.stderrText.contains("source PostgreSQL at 127.0.0.1:\(replay.cluster.port)/\(replay.database)"))
        #expect(!(outcome.stderrText + outcome.stdoutText).contains(replay.password))
        #expect(FileManager.default.fileExists(atPath: directory.path("seed.db.evidence.json")))
        let verified = try SeedkitProcess.run(["verify", directory.path("seed.db"), "--json"])
        #expect(verified.status == 0, "\(verified.stdoutText)")
    }
}
