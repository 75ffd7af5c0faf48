import Foundation
import Testing
import _SeedkitTestSupport
@testable import SeedPipeline

/// docs/pipelines.md "Dry run": `--dry-run` checks what a run will need from outside — the source, the operator
/// credential (an operator call), the rehearsal credential (a connect), the publish parent (writable, with room) —
/// each a typed check; any failed check fails the dry run, and nothing is written.
@Suite(.serialized) struct PipelineDryRunTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory(prefix: "seedkit-pipeline-dry-run")
    }

    func serverDefinition(
        _ server: RunningServer, operatorToken: String = RunningServer.operatorToken,
        userToken: String = "secret-alice", publish: String = "out/seed"
    ) throws -> PipelineDefinition {
        let json = """
            {"source": {"server": {"url": "\(server.baseURL)", "operator_token_env": "OPERATOR",
                                   "user_token_env": "USER"}},
             "page_limit": 50, "rehearsal": {"user": "alice"}, "publish": {"directory": "\(publish)"}}
            """
        return try PipelineDefinition(
            bytes: Array(json.utf8), baseDirectory: directory.url.path,
            environment: ["OPERATOR": operatorToken, "USER": userToken])
    }

    static let dryRun = PipelineRunOptions(dryRun: true)

    func check(_ report: PipelineReport, _ name: String) -> PipelineCheck? {
        report.checks.first { $0.name == name }
    }

    @Test func theRightCredentialsAndAWritableParentPassEveryCheck() throws {
        let server = try RunningServer(rows: 40)
        let report = try PipelineRunner.run(try serverDefinition(server), options: Self.dryRun)
        #expect(report.outcome == .validated)
        let names = ["source", "operator_credential", "rehearsal_credential", "publish_parent"]
        #expect(report.checks.map(\.name) == names)
        let failed = report.checks.filter { !$0.passed }
        #expect(failed.isEmpty, "\(failed)")
        let entries = try FileManager.default.contentsOfDirectory(atPath: directory.url.path)
        #expect(entries.isEmpty, "nothing written")
    }

    @Test func aWrongRehearsalTokenFailsTheDryRunNamingItsVariable() throws {
        let server = try RunningServer(rows: 40)
        let report = try PipelineRunner.run(
            try serverDefinition(server, userToken: "not-a-credential"), options: Self.dryRun)
        #expect(report.outcome == .failed)
        #expect(check(report, "operator_credential")?.passed == true)
        let rehearsal = try #require(check(report, "rehearsal_credential"))
        #expect(rehearsal.rule == "rehearsal_credential_refused")
        #expect(rehearsal.message.contains("$USER") && !rehearsal.message.contains("not-a-credential"))
        #expect(report.summaryJSON.objectValue?["checks"] != nil)
    }

    @Test func aWrongOperatorTokenFailsTheOperatorCheck() throws {
        let server = try RunningServer(rows: 40)
        let report = try PipelineRunner.run(
            try serverDefinition(server, operatorToken: "not-the-operator"), options: Self.dryRun)
        #expect(report.outcome == .failed)
        #expect(check(report, "operator_credential")?.rule == "operator_credential_refused")
        #expect(check(report, "operator_credential")?.message.contains("$OPERATOR") == true)
    }

    @Test func aPublishParentUnderARegularFileFailsThePublishParentCheck() throws {
        let server = try RunningServer(rows: 40)
        _ = try directory.write("blocker", Array("a file".utf8))
        let report = try PipelineRunner.run(
            try serverDefinition(server, publish: "blocker/out/seed"), options: Self.dryRun)
        #expect(report.outcome == .failed)
        #expect(check(report, "publish_parent")?.rule == "publish_parent_unusable")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path) == ["blocker"])
    }

    @Test func tooLittleFreeSpaceFailsThePublishParentCheck() throws {
        let server = try RunningServer(rows: 40)
        var options = Self.dryRun
        options.freeSpace = { _ in 4_096 }
        let report = try PipelineRunner.run(try serverDefinition(server), options: options)
        #expect(report.outcome == .failed)
        let parent = try #require(check(report, "publish_parent"))
        #expect(parent.rule == "publish_parent_no_space")
        #expect(parent.message.contains("4096 bytes free"))
        options.freeSpace = { _ in Int64(1) << 40 }
        #expect(try PipelineRunner.run(try serverDefinition(server), options: options).outcome == .validated)
    }

    @Test func anUnreachableSourceIsACheckNamingTheKind() throws {
        let port = try SilentListener.refusedPort()
        let json = """
            {"source": {"server": {"url": "http://127.0.0.1:\(port)", "operator_token_env": "OPERATOR",
                                   "user_token_env": "USER"}},
             "rehearsal": {"user": "alice"}, "publish": {"directory": "out/seed"}}
            """
        let definition = try PipelineDefinition(
            bytes: Array(json.utf8), baseDirectory: directory.url.path, environment: ["OPERATOR": "o", "USER": "u"])
        var options = Self.dryRun
        options.network = NetworkSettings(retries: 0, sleep: { _ in Issue.record("no retry without --retries") })
        let report = try PipelineRunner.run(definition, options: options)
        #expect(report.outcome == .failed)
        #expect(check(report, "source")?.rule == "connection_refused")
        #expect(check(report, "rehearsal_credential")?.rule == "connection_refused")
        #expect(check(report, "source")?.message.contains("http://127.0.0.1:\(port)/sync/schema") == true)
    }
}
