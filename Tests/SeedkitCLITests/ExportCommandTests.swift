import Foundation
import SynchroProtocol
import Testing
import _SeedkitTestSupport

@Suite(.serialized) struct ExportCommandTests {
    let server: RunningServer
    let directory: TemporaryDirectory

    init() throws {
        server = try RunningServer(rows: 150)
        directory = try TemporaryDirectory(prefix: "seedkit-export-cli")
    }

    func export(_ extra: [String] = [], token: String? = RunningServer.operatorToken) throws -> SeedkitProcess.Outcome {
        try SeedkitProcess.run(
            ["export", "--source", server.baseURL, "--out", directory.path("seed.db"), "--token-env", "TEST_OPERATOR"]
                + extra,
            environment: token.map { ["TEST_OPERATOR": $0] } ?? [:])
    }

    @Test func exportsAVerifiedSeedWithEvidenceAndPrintsNoSecret() throws {
        let outcome = try export(["--json"])
        #expect(outcome.status == 0, "\(outcome.stderrText)")
        let json = try StrictJSONParser().parse(outcome.stdout)
        let rows = json.objectValue?["rows"]?.numberValue?.exactInt64 ?? 0
        #expect(rows > 150)
        let evidence = try StrictJSONParser().parse(
            Array(try Data(contentsOf: URL(fileURLWithPath: directory.path("seed.db.evidence.json")))))
        let artifact = evidence.objectValue?["artifacts"]?.arrayValue?.first?.objectValue
        #expect(artifact?["name"]?.stringValue == "seed.db")
        #expect(artifact?["sha256"]?.stringValue?.utf8.count == 64)
        #expect(!outcome.stdoutText.contains(RunningServer.operatorToken))
        #expect(!outcome.stdoutText.contains("sc1."))
        #expect(!outcome.stderrText.contains("\u{1B}["))
    }

    @Test func aSecondExportRefusesToReplaceTheFirstWithoutForce() throws {
        #expect(try export().status == 0)
        let before = try Data(contentsOf: URL(fileURLWithPath: directory.path("seed.db")))
        let again = try export()
        #expect(again.status == 2)
        #expect(again.stderrText.contains("output_exists"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: directory.path("seed.db"))) == before)
        #expect(try export(["--force"]).status == 0)
    }

    /// A file at the evidence path that no export of this output wrote is kept and reported (issue #19).
    @Test func anEvidenceFileExportDidNotWriteIsKeptWithoutForce() throws {
        let evidence = directory.path("seed.db.evidence.json")
        let foreign = Data("someone else's notes\n".utf8)
        try foreign.write(to: URL(fileURLWithPath: evidence))
        let refused = try export()
        #expect(refused.status == 2)
        #expect(refused.stderrText.contains("evidence_exists"), "\(refused.stderrText)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: evidence)) == foreign)
        #expect(!FileManager.default.fileExists(atPath: directory.path("seed.db")))
        #expect(try export(["--force"]).status == 0)
        #expect(try Data(contentsOf: URL(fileURLWithPath: evidence)) != foreign)
    }

    @Test func usageErrorsExitWithStatusTwo() throws {
        #expect(try export(token: nil).status == 2)
        #expect(try export(["--page-limit", "0"]).status == 2)
        #expect(try export(["--scopes", "user:alice"]).status == 2)
        #expect(try SeedkitProcess.run(["export", "--out", directory.path("x.db")]).status == 2)
    }

    @Test func aWrongOperatorTokenIsACheckFailureThatNamesTheRefusal() throws {
        let outcome = try export(token: "not-the-token")
        #expect(outcome.status == 1)
        #expect(outcome.stderrText.contains("401"))
        #expect(outcome.stderrText.contains("refused the operator token from the variable TEST_OPERATOR"))
        #expect(!outcome.stderrText.contains("not-the-token"))
        #expect(!FileManager.default.fileExists(atPath: directory.path("seed.db")))
    }
}

@Suite(.serialized) struct ExportCrashTests {
    /// `export.published` is the verified seed made durable under its hidden temporary name, before any publication.
    @Test(arguments: ["export.page:1", "export.page:3", "export.committed", "export.finalized", "export.verified",
                      "export.published"])
    func aKillBeforePublicationLeavesNoOutput(point: String) throws {
        let server = try RunningServer(rows: 150)
        let directory = try TemporaryDirectory(prefix: "seedkit-export-crash")
        let outcome = try SeedkitProcess.run(
            ["export", "--source", server.baseURL, "--out", directory.path("seed.db"), "--page-limit", "40"],
            environment: ["SEEDKIT_OPERATOR_TOKEN": RunningServer.operatorToken, "SEEDKIT_CRASH_AT": point])
        #expect(outcome.status == SIGKILL)
        let visible = try FileManager.default.contentsOfDirectory(atPath: directory.url.path).filter { !$0.hasPrefix(".") }
        #expect(visible.isEmpty, "\(visible)")
        // The next run publishes normally beside whatever temporary the killed run left.
        let again = try SeedkitProcess.run(
            ["export", "--source", server.baseURL, "--out", directory.path("seed.db")],
            environment: ["SEEDKIT_OPERATOR_TOKEN": RunningServer.operatorToken])
        #expect(again.status == 0, "\(again.stderrText)")
    }

    @Test func aKillRightAfterPublicationLeavesACompleteVerifiedSeedWithItsEvidence() throws {
        let server = try RunningServer(rows: 150)
        let directory = try TemporaryDirectory(prefix: "seedkit-export-crash")
        let outcome = try SeedkitProcess.run(
            ["export", "--source", server.baseURL, "--out", directory.path("seed.db")],
            environment: ["SEEDKIT_OPERATOR_TOKEN": RunningServer.operatorToken,
                          "SEEDKIT_CRASH_AT": "export.seed_published"])
        #expect(outcome.status == SIGKILL)
        let verify = try SeedkitProcess.run(["verify", directory.path("seed.db")])
        #expect(verify.status == 0, "\(verify.stdoutText)")
        let digest = try Self.digest(directory.path("seed.db"))
        #expect(try Self.evidenceDigest(directory.path("seed.db")) == digest)
    }

    /// The evidence is published before the seed: a kill between the two leaves the evidence and no seed, and the
    /// next export (without `--force`) publishes both.
    @Test func aKillBetweenEvidenceAndSeedLeavesTheEvidenceAndNoSeed() throws {
        let server = try RunningServer(rows: 150)
        let directory = try TemporaryDirectory(prefix: "seedkit-export-crash")
        let seed = directory.path("seed.db")
        let environment = ["SEEDKIT_OPERATOR_TOKEN": RunningServer.operatorToken]
        let outcome = try SeedkitProcess.run(
            ["export", "--source", server.baseURL, "--out", seed],
            environment: environment.merging(["SEEDKIT_CRASH_AT": "export.evidence_published"]) { $1 })
        #expect(outcome.status == SIGKILL)
        let visible = try FileManager.default.contentsOfDirectory(atPath: directory.url.path).filter { !$0.hasPrefix(".") }
        #expect(visible == ["seed.db.evidence.json"])
        #expect(try Self.evidenceDigest(seed)?.utf8.count == 64)

        let again = try SeedkitProcess.run(["export", "--source", server.baseURL, "--out", seed], environment: environment)
        #expect(again.status == 0, "\(again.stderrText)")
        let digest = try Self.digest(seed)
        #expect(try Self.evidenceDigest(seed) == digest)
    }

    /// With `--force`, the remaining window: the new evidence beside the previous seed, told apart by its SHA-256.
    @Test func aForcedExportKilledBetweenEvidenceAndSeedKeepsThePreviousSeedAndADetectableMismatch() throws {
        let server = try RunningServer(rows: 150)
        let directory = try TemporaryDirectory(prefix: "seedkit-export-crash")
        let seed = directory.path("seed.db")
        let environment = ["SEEDKIT_OPERATOR_TOKEN": RunningServer.operatorToken]
        let first = try SeedkitProcess.run(["export", "--source", server.baseURL, "--out", seed], environment: environment)
        #expect(first.status == 0, "\(first.stderrText)")
        let previous = try Data(contentsOf: URL(fileURLWithPath: seed))
        let outcome = try SeedkitProcess.run(
            ["export", "--source", server.baseURL, "--out", seed, "--force", "--page-limit", "30"],
            environment: environment.merging(["SEEDKIT_CRASH_AT": "export.evidence_published"]) { $1 })
        #expect(outcome.status == SIGKILL)
        #expect(try Data(contentsOf: URL(fileURLWithPath: seed)) == previous)
        let evidence = try #require(try Self.evidenceDigest(seed))
        #expect(try evidence != Self.digest(seed))
    }

    static func digest(_ path: String) throws -> String {
        Hex.encode(SHA256.hash(Array(try Data(contentsOf: URL(fileURLWithPath: path)))))
    }

    /// The SHA-256 the evidence beside `seed` records for it.
    static func evidenceDigest(_ seed: String) throws -> String? {
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: seed + ".evidence.json")))
        let artifact = try StrictJSONParser().parse(bytes).objectValue?["artifacts"]?.arrayValue?.first?.objectValue
        return artifact?["sha256"]?.stringValue
    }
}
