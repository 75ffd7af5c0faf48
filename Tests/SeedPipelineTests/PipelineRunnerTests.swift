import Foundation
import Synchronization
import SynchroProtocol
import Testing
import _SeedkitTestSupport
@testable import SeedArtifacts
@testable import SeedPipeline

/// docs/pipelines.md: the steps, publication atomicity and the reuse rule, on the embedded reference server with a
/// small dataset (and a running server for the server source).
@Suite(.serialized) struct PipelineRunnerTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory(prefix: "seedkit-pipeline-runner")
    }

    var publishDirectory: String { directory.path("out/seed") }

    /// An embedded pipeline over 200 catalog rows in pages of 50.
    func embedded(
        pageLimit: Int = 50, steps: [String]? = nil, scopes: String = #"["catalog"]"#, dataset: String? = nil,
        rebuildCompare: Bool = false
    ) throws -> PipelineDefinition {
        let datasetPath = dataset ?? RepositoryLayout.root.appendingPathComponent("seeds/demo").path
        let stepList = steps.map { ", \"steps\": [" + $0.map { "\"\($0)\"" }.joined(separator: ", ") + "]" } ?? ""
        let json = """
            {"name": "test", "source": {"embedded": {"dataset": "\(datasetPath)", "rows": 200}},
             "scopes": \(scopes), "page_limit": \(pageLimit), "pack": {"level": 3},
             "rehearsal": {"user": "alice", "rebuild_compare": \(rebuildCompare)},
             "publish": {"directory": "out/seed"}\(stepList)}
            """
        return try PipelineDefinition(bytes: Array(json.utf8), baseDirectory: directory.url.path, environment: [:])
    }

    /// Every file of a directory tree, by relative path, with its bytes.
    func snapshot(_ path: String) -> [String: [UInt8]] {
        var files: [String: [UInt8]] = [:]
        let enumerator = FileManager.default.enumerator(atPath: path)
        while let name = enumerator?.nextObject() as? String {
            let full = URL(fileURLWithPath: path).appendingPathComponent(name).path
            if let data = FileManager.default.contents(atPath: full) { files[name] = Array(data) }
        }
        return files
    }

    /// What the publish directory's parent holds: the publication only, no scratch directory left behind.
    /// The parent's entries besides the publish directory's lock file (`.seed.lock`, kept for the next run).
    func parentEntries() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory.path("out")).filter { !$0.hasSuffix(".lock") }.sorted()
    }

    @Test func aRunPublishesTheSeedItsFrameEvidenceAndMatchingSums() throws {
        let events = EventLog()
        let report = try PipelineRunner.run(try embedded(rebuildCompare: true), events: events.record)
        #expect(report.outcome == .published)
        #expect(report.steps.map(\.outcome) == PipelineStep.allCases.map { $0 == .sign ? .skipped : .passed })
        #expect(report.rehearsal?.passed == true)
        #expect(report.rehearsal?.scopes.first?.matchesRebuild == true)

        let files = try FileManager.default.contentsOfDirectory(atPath: publishDirectory).sorted()
        #expect(files == ["SHA256SUMS", "evidence.json", "seed.db", "seed.db.zst"])
        #expect(try parentEntries() == ["seed"])

        let sumsData = try #require(FileManager.default.contents(atPath: publishDirectory + "/SHA256SUMS"))
        let sums = String(decoding: sumsData, as: UTF8.self)
        let expectedSums = try ["evidence.json", "seed.db", "seed.db.zst"].map { name in
            "\(try FileDigest.sha256(path: publishDirectory + "/" + name).hex)  \(name)\n"
        }.joined()
        #expect(sums == expectedSums)

        let evidence = try StrictJSONParser().parse(
            Array(try #require(FileManager.default.contents(atPath: publishDirectory + "/evidence.json"))))
        let object = try #require(evidence.objectValue)
        let artifacts = try #require(object["artifacts"]?.arrayValue)
        #expect(artifacts.compactMap { $0.objectValue?["name"]?.stringValue } == ["seed.db", "seed.db.zst"])
        for artifact in artifacts {
            let name = try #require(artifact.objectValue?["name"]?.stringValue)
            let digest = try FileDigest.sha256(path: publishDirectory + "/" + name)
            #expect(artifact.objectValue?["sha256"]?.stringValue == digest.hex)
        }
        let timings = try #require(object["timings_ms"]?.objectValue)
        #expect(timings.keys.sorted() == ["export", "install", "pack", "rehearse", "verify"])
        #expect(object["rows"]?.numberValue?.exactInt64 == report.export?.rows)
        #expect(object["pipeline"]?.objectValue?["fingerprint"]?.stringValue?.count == 64)
        #expect(report.seed?.rows == Int64(240), "200 products and the dataset's 40 categories")
        #expect(report.seed?.files.map(\.name) == ["seed.db", "seed.db.zst"])

        let started = events.steps(started: true)
        let finished = events.steps(started: false)
        let unsigned = PipelineStep.allCases.filter { $0 != .sign }
        #expect(started == unsigned && finished == unsigned)
    }

    @Test func reRunningWithUnchangedInputsReusesThePublicationWithoutRewritingIt() throws {
        let definition = try embedded()
        #expect(try PipelineRunner.run(definition).outcome == .published)
        let before = try attributes(publishDirectory)
        let events = EventLog()
        let again = try PipelineRunner.run(definition, events: events.record)
        #expect(again.outcome == .upToDate)
        #expect(again.steps.allSatisfy { $0.outcome == ($0.step == .sign ? .skipped : .reused) })
        #expect(again.seed?.rows == Int64(240))
        #expect(events.steps(started: true).isEmpty, "nothing is redone")
        #expect(try attributes(publishDirectory) == before, "no file is rewritten")

        let forced = try PipelineRunner.run(definition, options: PipelineRunOptions(force: true))
        #expect(forced.outcome == .published)
        #expect(try attributes(publishDirectory) != before)
        #expect(try parentEntries() == ["seed"])
    }

    @Test func aChangedDefinitionOrADamagedPublicationIsRebuilt() throws {
        #expect(try PipelineRunner.run(try embedded()).outcome == .published)
        #expect(try PipelineRunner.run(try embedded(pageLimit: 40)).outcome == .published, "another page limit")
        #expect(try PipelineRunner.run(try embedded(pageLimit: 40)).outcome == .upToDate)
        let handle = try #require(FileHandle(forWritingAtPath: publishDirectory + "/seed.db.zst"))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data([0]))
        try handle.close()
        #expect(try PipelineRunner.run(try embedded(pageLimit: 40)).outcome == .published, "sums no longer match")
        #expect(try PipelineRunner.run(try embedded(pageLimit: 40)).outcome == .upToDate)
    }

    @Test func aTamperedRowFailsTheRunAndLeavesThePreviousPublicationByteForByte() throws {
        #expect(try PipelineRunner.run(try embedded()).outcome == .published)
        let before = snapshot(publishDirectory)
        let report = try PipelineRunner.run(
            try embedded(pageLimit: 40), options: PipelineRunOptions(wrapSource: { TamperingSource(base: $0) }))
        #expect(report.outcome == .failed)
        #expect(report.failedStep?.step == .export)
        #expect(report.failedStep?.failure?.rule == "row_digest_mismatch")
        #expect(report.steps.dropFirst().allSatisfy { $0.outcome == ($0.step == .sign ? .skipped : .notRun) })
        #expect(report.seed == nil)
        #expect(snapshot(publishDirectory) == before)
        #expect(try parentEntries() == ["seed"])
    }

    @Test func aFailedFirstRunPublishesNothing() throws {
        let report = try PipelineRunner.run(
            try embedded(), options: PipelineRunOptions(wrapSource: { TamperingSource(base: $0) }))
        #expect(report.outcome == .failed)
        #expect(!FileManager.default.fileExists(atPath: publishDirectory))
        #expect(try parentEntries().isEmpty)
    }

    @Test func aDryRunValidatesTheSourceAndWritesNothing() throws {
        let dry = try PipelineRunner.run(try embedded(), options: PipelineRunOptions(dryRun: true))
        #expect(dry.outcome == .validated)
        #expect(!dry.upToDate)
        #expect(dry.steps.allSatisfy { $0.outcome == ($0.step == .sign ? .skipped : .planned) })
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path).isEmpty)

        #expect(try PipelineRunner.run(try embedded()).outcome == .published)
        let before = snapshot(directory.url.path)
        let again = try PipelineRunner.run(try embedded(), options: PipelineRunOptions(dryRun: true))
        #expect(again.outcome == .validated && again.upToDate)
        #expect(snapshot(directory.url.path) == before)

        #expect(throws: PipelineError.self) {
            try PipelineRunner.run(try embedded(scopes: #"["user:alice"]"#), options: PipelineRunOptions(dryRun: true))
        }
    }

    @Test func problemsFoundBeforeTheFirstStepAreErrorsThatNameTheirRule() throws {
        #expect(rule { try PipelineRunner.run(try embedded(scopes: #"["nope"]"#)) } == "scope_not_portable")
        let empty = try TemporaryDirectory(prefix: "seedkit-empty-dataset")
        let invalid = rule { try PipelineRunner.run(try embedded(dataset: empty.url.path)) }
        #expect(invalid?.hasPrefix("invalid_dataset.") == true)
        try FileManager.default.createDirectory(atPath: publishDirectory, withIntermediateDirectories: true)
        try directory.write("out/seed/notes.txt", Array("mine".utf8))
        #expect(rule { try PipelineRunner.run(try embedded()) } == "publish_directory_not_publication")
        #expect(FileManager.default.contents(atPath: publishDirectory + "/notes.txt") == Data("mine".utf8))
        #expect(try parentEntries() == ["seed"])
    }

    @Test func aPipelineWithoutPublishRunsItsStepsAndPublishesNothing() throws {
        let report = try PipelineRunner.run(try embedded(steps: ["export", "verify", "pack"]))
        #expect(report.outcome == .completed)
        #expect(report.steps.map(\.outcome) == [.passed, .passed, .passed, .skipped, .skipped, .skipped, .skipped])
        #expect(report.pack != nil)
        #expect(!FileManager.default.fileExists(atPath: publishDirectory))
        #expect(try parentEntries().isEmpty)
    }

    @Test func aServerSourceIsReusedUntilItsContentChangesAndARehearsalFailurePublishesNothing() throws {
        let server = try RunningServer(rows: 120)
        func definition(userToken: String) throws -> PipelineDefinition {
            let json = """
                {"source": {"server": {"url": "\(server.baseURL)", "operator_token_env": "OPERATOR",
                                       "user_token_env": "USER"}},
                 "page_limit": 50, "pack": {"level": 3}, "rehearsal": {"user": "alice"},
                 "publish": {"directory": "out/seed"}}
                """
            return try PipelineDefinition(
                bytes: Array(json.utf8), baseDirectory: directory.url.path,
                environment: ["OPERATOR": RunningServer.operatorToken, "USER": userToken])
        }
        let first = try PipelineRunner.run(try definition(userToken: "secret-alice"))
        #expect(first.outcome == .published)
        #expect(first.rehearsal?.scopes.allSatisfy { $0.continued && $0.verified } == true)
        #expect(try PipelineRunner.run(try definition(userToken: "secret-alice")).outcome == .upToDate)

        let before = snapshot(publishDirectory)
        let refused = try PipelineRunner.run(
            try definition(userToken: "not-a-credential"), options: PipelineRunOptions(force: true))
        #expect(refused.outcome == .failed)
        #expect(refused.failedStep?.step == .rehearse)
        #expect(refused.steps.last?.outcome == .notRun)
        #expect(snapshot(publishDirectory) == before)

        try server.engine.operatorWrite(
            table: "tbl_categories", pk: .number(JSONNumber(1)),
            row: try StrictJSONParser().parse(#"{"fld_category_id":1,"fld_category_name":"renamed"}"#))
        let changed = try PipelineRunner.run(try definition(userToken: "secret-alice"))
        #expect(changed.outcome == .published, "a changed scope checksum makes the publication stale")
        #expect(snapshot(publishDirectory) != before)
    }

    @Test func aPostgreSQLSourceExportsThroughUpstreamsFunctionsAndRehearsesWithTheServerOfTheSameData() throws {
        let server = try RunningServer(rows: 120)
        let replay = try SeedExportReplay(
            cluster: try PostgresCluster.shared(), recording: try ExportRecording.record(from: server, pageLimit: 50))
        let connection = replay.cluster.socketConnectionString(database: replay.database, user: replay.exporter)
        func definition(_ connection: String) throws -> PipelineDefinition {
            let json = """
                {"source": {"postgresql": {"connection": "\(connection)", "server_url": "\(server.baseURL)",
                                           "user_token_env": "USER"}},
                 "page_limit": 50, "pack": {"level": 3}, "rehearsal": {"user": "alice"},
                 "publish": {"directory": "out/seed"}}
                """
            return try PipelineDefinition(
                bytes: Array(json.utf8), baseDirectory: directory.url.path, environment: ["USER": "secret-alice"])
        }
        let first = try PipelineRunner.run(try definition(connection))
        #expect(first.outcome == .published, "\(first.steps.map { "\($0.step): \($0.outcome)" })")
        #expect(first.rehearsal?.scopes.allSatisfy { $0.continued && $0.verified } == true)
        #expect(try PipelineRunner.run(try definition(connection)).outcome == .upToDate)

        let withPassword = try #require(throws: PipelineDefinitionError.self) {
            try definition(connection + " password=\(replay.password)")
        }
        #expect(withPassword.rule == "invalid_value")
        #expect(!"\(withPassword)".contains(replay.password))
    }

    @Test func eventsAndTheSummaryAreCanonicalJSONWithoutSecrets() throws {
        let events = EventLog()
        let report = try PipelineRunner.run(try embedded(), events: events.record)
        var lines = events.all.compactMap(\.json)
        lines.append(report.summaryJSON)
        for line in lines {
            let text = try CanonicalJSON.string(line)
            #expect(try CanonicalJSON.string(try StrictJSONParser().parse(text)) == text)
        }
        let summary = try #require(report.summaryJSON.objectValue)
        #expect(summary["outcome"]?.stringValue == "published")
        #expect(summary["steps"]?.arrayValue?.count == PipelineStep.allCases.count)
        // The export and verification reports are in the summary, not only in the evidence.
        let export = try #require(summary["export"]?.objectValue)
        #expect(export["rows"]?.numberValue?.exactInt64 == report.export?.rows && export["export_id"] != nil)
        let verification = try #require(summary["verification"]?.objectValue)
        #expect(verification["ok"]?.boolValue == true && verification["checks"]?.numberValue?.exactInt64 ?? 0 > 0)
        let evidence = String(decoding: try #require(FileManager.default.contents(
            atPath: publishDirectory + "/evidence.json")), as: UTF8.self)
        #expect(!evidence.contains("Bearer") && !evidence.contains("receipt"))
    }

    private func rule(_ body: () throws -> PipelineReport) -> String? {
        do {
            _ = try body()
            return nil
        } catch let error as PipelineError {
            return error.rule
        } catch {
            return "\(error)"
        }
    }

    /// Inode and modification time of every file in a directory.
    private func attributes(_ path: String) throws -> [String: [String]] {
        var result: [String: [String]] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: path) {
            let attributes = try FileManager.default.attributesOfItem(atPath: path + "/" + name)
            result[name] = ["\(attributes[.systemFileNumber] ?? "")", "\(attributes[.modificationDate] ?? "")"]
        }
        return result
    }
}

/// Collects events from the runner's handler.
final class EventLog: Sendable {
    private let events = Mutex<[PipelineEvent]>([])

    var record: @Sendable (PipelineEvent) -> Void {
        { event in self.events.withLock { $0.append(event) } }
    }

    var all: [PipelineEvent] {
        events.withLock { $0 }
    }

    func steps(started: Bool) -> [PipelineStep] {
        all.compactMap { event in
            switch event {
            case .stepStarted(let step) where started: step
            case .stepFinished(let result) where !started: result.step
            default: nil
            }
        }
    }
}

/// A source that changes one field of the first record of every page and leaves its checksum as it was.
struct TamperingSource: SeedExportSource {
    let base: any SeedExportSource

    func schemaManifest() throws(SeedExportError) -> [UInt8] {
        try base.schemaManifest()
    }

    func exportManifest(pageLimit: Int64) throws(SeedExportError) -> [UInt8] {
        try base.exportManifest(pageLimit: pageLimit)
    }

    func scopePage(_ request: SeedPageRequest) throws(SeedExportError) -> [UInt8] {
        let bytes = try base.scopePage(request)
        guard let page = try? StrictJSONParser().parse(bytes), let object = page.objectValue,
              let records = object["records"]?.arrayValue, let first = records.first?.objectValue,
              let row = first["row"]?.objectValue,
              let target = row.members.firstIndex(where: { $0.key.hasSuffix("_name") || $0.key.hasSuffix("_title") })
        else { return bytes }
        var fields = row.members
        fields[target] = JSONMember(fields[target].key, .string("tampered"))
        let record = JSONObject(first.members.map { member in
            member.key == "row" ? JSONMember("row", .object(JSONObject(fields))) : member
        })
        let tampered = JSONObject(object.members.map { member in
            member.key == "records" ? JSONMember("records", .array([.object(record)] + records.dropFirst())) : member
        })
        return (try? CanonicalJSON.encode(.object(tampered))) ?? bytes
    }
}
