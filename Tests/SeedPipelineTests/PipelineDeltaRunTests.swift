import Foundation
import SynchroProtocol
import SynchroServer
import Testing
import _SeedkitTestSupport
@testable import SeedPipeline

/// A pipeline whose source is a delta-sync API (docs/pipelines.md, "Delta source"): the definition member, the
/// run's steps against the reference delta server on loopback, the reuse rule, and a failing export that leaves the
/// publication in place.
@Suite(.serialized) struct PipelineDeltaRunTests {
    static let token = "delta-pipeline-secret"
    let directory: TemporaryDirectory
    let server: DeltaReferenceServer

    init() throws {
        directory = try TemporaryDirectory(prefix: "seedkit-pipeline-delta-lib")
        server = try DeltaReferenceServer(storePath: directory.path("store.db"), entities: ["articles"], token: Self.token)
        try server.start()
        try write((1...12).map { "a\($0)" })
        _ = try directory.write("source.json", Array("""
            {"format": "seedkit-delta-source/1", "base_url": "http://127.0.0.1:9", "auth": {"bearer_env": "TOKEN"},
             "entities": [{"name": "articles", "table": "articles", "primary_key": "id",
               "columns": [{"name": "id", "type": "string"}, {"name": "title", "type": "string"},
                           {"name": "words", "type": "int64"}],
               "paging": {"shape": "changes", "path": "/v1/sync/articles", "limit": 5}}]}
            """.utf8))
    }

    func write(_ ids: [String]) throws {
        _ = try server.store.write(entity: "articles", ids.map { id in
            (id, JSONObject([JSONMember("id", .string(id)), JSONMember("title", .string("T \(id)")),
                             JSONMember("words", .number(JSONNumber(Int64(id.count))))]))
        })
    }

    func definition(
        _ extra: String = "", environment: [String: String] = ["TOKEN": token]
    ) throws -> PipelineDefinition {
        try PipelineDefinition(bytes: Array("""
            {"source": {"delta": {"definition": "source.json", "base_url": "\(server.baseURL)"}},
             "pack": {"level": 3}, "publish": {"directory": "out"}\(extra)}
            """.utf8), baseDirectory: directory.url.path, environment: environment)
    }

    @Test func theDeltaMemberLoadsTheDefinitionAndItsErrorsNameTheirMember() throws {
        let pipeline = try definition()
        guard case .delta(let source) = pipeline.source else { Issue.record("not a delta source"); return }
        #expect(source.definition.baseURL == server.baseURL && source.bearer?.value == Self.token)
        #expect(source.bearer?.description == "$TOKEN (hidden)")
        #expect(pipeline.steps == PipelineStep.allCases.filter { $0 != .sign })
        #expect(throws: PipelineDefinitionError.self) { try definition(#", "steps": ["export", "verify", "sign"]"#) }
        do {
            _ = try PipelineDefinition(bytes: Array(#"""
                {"source": {"delta": {"definition": "missing.json"}}, "publish": {"directory": "out"}}
                """#.utf8), baseDirectory: directory.url.path, environment: [:])
            Issue.record("a missing definition file loaded")
        } catch {
            #expect("\(error)".contains("source.delta.definition"))
        }
        _ = try directory.write("bad.json", Array(#"{"format": "seedkit-delta-source/1", "entities": []}"#.utf8))
        do {
            _ = try PipelineDefinition(bytes: Array(#"""
                {"source": {"delta": {"definition": "bad.json"}}, "publish": {"directory": "out"}}
                """#.utf8), baseDirectory: directory.url.path, environment: [:])
            Issue.record("a broken definition file loaded")
        } catch {
            #expect("\(error)".contains("source.delta.definition") && "\(error)".contains("base_url"))
        }
        // The token is not needed to load: a run's export fails without it, a dry run's bearer check names it.
        let tokenless = try definition(environment: [:])
        let report = try PipelineRunner.run(tokenless)
        #expect(report.outcome == .failed && report.failedStep?.failure?.rule == "missing_credential")
    }

    @Test func aRunPublishesTheRehearsedSeedAndIsReusedUntilTheAPIChanges() throws {
        let pipeline = try definition()
        let report = try PipelineRunner.run(pipeline)
        #expect(report.outcome == .published, "\(report.steps.map { ($0.step, $0.outcome, $0.failure?.message) })")
        #expect(report.seed?.rows == 12 && report.seed?.scopes.map(\.id) == ["articles"])
        #expect(report.steps.first { $0.step == .rehearse }?.outcome == .passed)

        let reused = try PipelineRunner.run(pipeline)
        #expect(reused.outcome == .upToDate && reused.seed?.scopes == report.seed?.scopes)
        #expect(try PipelineRunner.run(pipeline, options: PipelineRunOptions(force: true)).outcome == .published)

        try write(["a13"])
        let changed = try PipelineRunner.run(pipeline)
        #expect(changed.outcome == .published && changed.seed?.rows == 13)

        // A changed definition file is a changed input, even with the API unchanged.
        _ = try directory.write("source.json", Array(
            try String(contentsOfFile: directory.path("source.json"), encoding: .utf8)
                .replacingOccurrences(of: "\"limit\": 5", with: "\"limit\": 6").utf8))
        #expect(try PipelineRunner.run(try definition()).outcome == .published)
    }

    @Test func aFailingExportLeavesThePublicationInPlace() throws {
        let pipeline = try definition()
        #expect(try PipelineRunner.run(pipeline).outcome == .published)
        let before = try Data(contentsOf: URL(fileURLWithPath: directory.path("out/SHA256SUMS")))
        try write(["a20"])
        server.inject(.repeatedRev, for: "articles")
        // Forced: the reuse check's warm would otherwise take the fault's page.
        let failed = try PipelineRunner.run(pipeline, options: PipelineRunOptions(force: true))
        #expect(failed.outcome == .failed && failed.failedStep?.step == .export)
        #expect(failed.failedStep?.failure?.rule == "rev_repeated")
        #expect(try Data(contentsOf: URL(fileURLWithPath: directory.path("out/SHA256SUMS"))) == before)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory.url.path)
            .filter { $0.contains(".pipeline-") }
        #expect(leftovers.isEmpty)
    }
}
