import Foundation
import SynchroProtocol
import SynchroServer
import Testing
import _SeedkitTestSupport

/// `seedkit pipeline run` on the example delta pipeline (`pipelines/delta.example.json`) against the reference delta
/// server, in process on loopback: export, verify, pack, install, rehearse and publish; the publication verifies
/// with `seedkit verify`; a re-run with nothing new on the API is "up to date", and a write on the API makes the
/// next run publish again. The file is the example as shipped, with only its base URL and publish directory set
/// from the command line.
@Suite(.serialized) struct PipelineDeltaCLITests {
    static let token = "pipeline-delta-token"
    let directory: TemporaryDirectory
    let server: DeltaReferenceServer

    init() throws {
        directory = try TemporaryDirectory(prefix: "seedkit-pipeline-delta")
        server = try DeltaReferenceServer(
            storePath: directory.path("store.db"), entities: ["articles", "users"], token: Self.token)
        try server.start()
        _ = try server.store.write(entity: "articles", (1...30).map { index in
            ("a\(index)", JSONObject([
                JSONMember("id", .string("a\(index)")), JSONMember("title", .string("Article \(index)")),
                JSONMember("words", .number(JSONNumber(Int64(index)))),
            ]))
        })
        _ = try server.store.write(entity: "articles", [("a3", nil)])
        _ = try server.store.write(entity: "users", (1...6).map { index in
            ("u\(index)", JSONObject([JSONMember("id", .string("u\(index)")), JSONMember("name", .string("U\(index)"))]))
        })
    }

    var example: String { RepositoryLayout.root.appendingPathComponent("pipelines/delta.example.json").path }
    var publish: String { directory.path("out/delta") }

    func run(_ extra: [String] = [], token: String? = Self.token) throws -> SeedkitProcess.Outcome {
        try SeedkitProcess.run(
            ["pipeline", "run", example, "--set", "source.delta.base_url=\(server.baseURL)",
             "--set", "publish.directory=\(publish)"] + extra,
            environment: ["SEEDKIT_DELTA_TOKEN": token ?? ""])
    }

    func summary(_ outcome: SeedkitProcess.Outcome) throws -> JSONObject {
        // The summary object; a failed dry run closes with an `error` event after it.
        let objects = outcome.lines.compactMap { try? StrictJSONParser().parse(Array($0.utf8)).objectValue }
        return try #require(objects.last { $0["event"]?.stringValue == "summary" })
    }

    @Test func theExamplePublishesAVerifiedDeltaSeedAndAReRunIsUpToDate() throws {
        let first = try run(["--json"])
        #expect(first.status == 0, "\(first.stderrText)")
        let report = try summary(first)
        #expect(report["outcome"]?.stringValue == "published")
        #expect(report["steps"]?.arrayValue?.compactMap { $0.objectValue?["outcome"]?.stringValue }
            == ["passed", "passed", "passed", "passed", "passed", "skipped", "passed"])
        #expect(report["seed"]?.objectValue?["rows"]?.numberValue?.exactInt64 == 35)
        #expect(!first.stdoutText.contains(Self.token) && !first.stderrText.contains(Self.token))
        let names = try FileManager.default.contentsOfDirectory(atPath: publish).sorted()
        #expect(names == ["SHA256SUMS", "evidence.json", "seed.db", "seed.db.zst"])
        for file in ["seed.db", "seed.db.zst"] {
            let verify = try SeedkitProcess.run(["verify", directory.path("out/delta/\(file)")])
            #expect(verify.status == 0, "\(file): \(verify.stdoutText) \(verify.stderrText)")
        }
        let evidence = try String(contentsOfFile: directory.path("out/delta/evidence.json"), encoding: .utf8)
        #expect(evidence.contains("\"format\":\"seedkit-delta-evidence/1\"") && !evidence.contains(Self.token))

        let again = try run()
        #expect(again.status == 0, "\(again.stderrText)")
        #expect(again.lines.last?.hasPrefix("up to date: \(publish)") == true, "\(again.stdoutText)")

        // One write on the API: the published checkpoints are behind, so the next run exports and publishes.
        _ = try server.store.write(entity: "users", [("u7", JSONObject([
            JSONMember("id", .string("u7")), JSONMember("name", .string("U7")),
        ]))])
        let changed = try run(["--json"])
        #expect(changed.status == 0, "\(changed.stderrText)")
        #expect(try summary(changed)["outcome"]?.stringValue == "published")
        #expect(try summary(changed)["seed"]?.objectValue?["rows"]?.numberValue?.exactInt64 == 36)
    }

    @Test func aDryRunChecksTheDefinitionTheBearerVariableAndTheBaseURL() throws {
        let dry = try run(["--dry-run", "--json"])
        #expect(dry.status == 0, "\(dry.stderrText)")
        let checks = try summary(dry)["checks"]?.arrayValue?.compactMap(\.objectValue) ?? []
        #expect(checks.compactMap { $0["check"]?.stringValue } == ["definition", "bearer", "source", "publish_parent"])
        #expect(checks.allSatisfy { $0["passed"]?.boolValue == true })
        #expect(!FileManager.default.fileExists(atPath: publish))

        let noToken = try run(["--dry-run", "--json"], token: nil)
        #expect(noToken.status == 1)
        let bearer = try summary(noToken)["checks"]?.arrayValue?.compactMap(\.objectValue)
            .first { $0["check"]?.stringValue == "bearer" }
        #expect(bearer?["rule"]?.stringValue == "missing_credential")

        server.stop()
        let unreachable = try run(["--dry-run", "--json"])
        #expect(unreachable.status == 1)
        let source = try summary(unreachable)["checks"]?.arrayValue?.compactMap(\.objectValue)
            .first { $0["check"]?.stringValue == "source" }
        #expect(source?["passed"]?.boolValue == false)
    }

    @Test func validateAndSetKnowTheDeltaMembers() throws {
        let valid = try SeedkitProcess.run(["pipeline", "validate", example])
        #expect(valid.status == 0, "\(valid.stderrText)")
        #expect(valid.stdoutText.contains("delta source"))
        let bad = try SeedkitProcess.run(["pipeline", "validate", example, "--set", "source.delta.base_url=ftp://x"])
        #expect(bad.status != 0)
        #expect(bad.stderrText.contains("source.delta.base_url"), "\(bad.stderrText)")
        let unknown = try SeedkitProcess.run(["pipeline", "validate", example, "--set", "source.delta.url=http://x"])
        #expect(unknown.status != 0 && unknown.stderrText.contains("source.delta.url"))
    }
}
