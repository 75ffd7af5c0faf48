import Foundation
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// `seedkit pipeline run` as a user runs it, on a small embedded pipeline (docs/pipelines.md).
@Suite(.serialized) struct PipelineCommandTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory(prefix: "seedkit-pipeline-cli")
    }

    var publishDirectory: String { directory.path("out/catalog") }

    /// A pipeline file over 150 catalog rows of the demo dataset; `extra` members are spliced into the document.
    func pipelineFile(_ extra: String = "") throws -> String {
        let dataset = RepositoryLayout.root.appendingPathComponent("seeds/demo").path
        return try directory.write("catalog.json", Array("""
            {"source": {"embedded": {"dataset": "\(dataset)", "rows": 150}}, "page_limit": 50,
             "pack": {"level": 3}, "rehearsal": {"user": "alice"}, "publish": {"directory": "out/catalog"}\(extra)}
            """.utf8))
    }

    /// No carriage return or escape sequence: the progress display stays off when stderr is not a terminal.
    func expectNoTerminalControl(_ run: SeedkitProcess.Outcome) {
        for text in [run.stdoutText, run.stderrText] {
            #expect(!text.contains("\r") && !text.contains("\u{1B}"))
        }
    }

    @Test func aRunPublishesAndPrintsTheStepsAndThePublication() throws {
        let run = try SeedkitProcess.run(["pipeline", "run", try pipelineFile()])
        #expect(run.status == 0, "\(run.stderrText)")
        expectNoTerminalControl(run)
        for step in ["export", "verify", "pack", "install", "rehearse", "publish"] {
            #expect(run.lines.contains { $0.hasPrefix(step) && $0.contains("passed") }, "\(step)")
        }
        #expect(run.stdoutText.contains("catalog: 190 rows, checksum "))
        #expect(run.stdoutText.contains("continued, verified"))
        #expect(run.lines.last?.hasPrefix("published catalog to \(publishDirectory)") == true)
        let files = try FileManager.default.contentsOfDirectory(atPath: publishDirectory).sorted()
        #expect(files == ["SHA256SUMS", "evidence.json", "seed.db", "seed.db.zst"])

        let again = try SeedkitProcess.run(["pipeline", "run", try pipelineFile()])
        #expect(again.status == 0)
        #expect(again.lines.last?.hasPrefix("up to date: \(publishDirectory)") == true)
        expectNoTerminalControl(again)
        // Quiet: the exit status says it all.
        let quiet = try SeedkitProcess.run(["pipeline", "run", try pipelineFile(), "--quiet"])
        #expect(quiet.status == 0)
        #expect(quiet.stdoutText.isEmpty && quiet.stderrText.isEmpty, "\(quiet.stdoutText)\(quiet.stderrText)")
    }

    /// util-linux `script` runs the command on a pseudo-terminal, as an interactive user would.
    static let script = "/usr/bin/script"

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: script)))
    func onATerminalAProgressLineShowsEachStep() throws {
        let command = [SeedkitProcess.executable.path, "pipeline", "run", try pipelineFile()]
            .map { "'\($0)'" }.joined(separator: " ")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.script)
        process.arguments = ["-qec", command, "/dev/null"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(text)")
        for (index, step) in ["export", "verify", "pack", "install", "rehearse", "publish"].enumerated() {
            #expect(text.contains("\r\u{1B}[K[\(index + 1)/6] \(step)"), "\(step)")
        }
        #expect(text.contains(" rows  "), "the export line counts rows against the total")
    }

    @Test func jsonOutputIsOneCanonicalObjectPerLineWithEveryStepsOutcome() throws {
        let run = try SeedkitProcess.run(["pipeline", "run", try pipelineFile(), "--json"])
        #expect(run.status == 0, "\(run.stderrText)")
        expectNoTerminalControl(run)
        #expect(run.stderrText.isEmpty)
        let objects = try run.lines.map { line in
            let value = try StrictJSONParser().parse(line)
            #expect(try CanonicalJSON.string(value) == line)
            return try #require(value.objectValue)
        }
        let events = objects.compactMap { $0["event"]?.stringValue }
        #expect(events.first == "source_ready")
        #expect(events.last == "summary")
        let steps = ["export", "verify", "pack", "install", "rehearse", "publish"]
        let started = objects.filter { $0["event"]?.stringValue == "step_started" }
        #expect(started.compactMap { $0["step"]?.stringValue } == steps)
        let finished = objects.filter { $0["event"]?.stringValue == "step_finished" }
        #expect(finished.compactMap { $0["step"]?.stringValue } == steps)
        #expect(finished.allSatisfy { $0["outcome"]?.stringValue == "passed" && $0["seconds"]?.numberValue != nil })
        let summary = try #require(objects.last)
        #expect(summary["outcome"]?.stringValue == "published")
        #expect(summary["steps"]?.arrayValue?.compactMap { $0.objectValue?["outcome"]?.stringValue }
            == ["passed", "passed", "passed", "passed", "passed", "skipped", "passed"])
        #expect(summary["seed"]?.objectValue?["rows"]?.numberValue?.exactInt64 == 190)
        #expect(summary["rehearsal"]?.objectValue?["passed"]?.boolValue == true)

        let reused = try SeedkitProcess.run(["pipeline", "run", try pipelineFile(), "--json"])
        #expect(reused.status == 0)
        let lastLine = try #require(reused.lines.last)
        let last = try #require(try StrictJSONParser().parse(lastLine).objectValue)
        #expect(last["outcome"]?.stringValue == "up_to_date")
    }

    @Test func aDryRunValidatesAndWritesNothing() throws {
        let file = try pipelineFile()
        let run = try SeedkitProcess.run(["pipeline", "run", file, "--dry-run"])
        #expect(run.status == 0, "\(run.stderrText)")
        #expect(run.stdoutText.contains("is valid"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path) == ["catalog.json"])
        expectNoTerminalControl(run)
    }

    /// Invalid files: exit status 2, the rule and the member on standard error (and in the `--json` error line).
    static let invalidFiles: [(String, String, String)] = [
        (#", "steps": []"#, "invalid_value", "steps"),
        (#", "scopes": ["catalog", "catalog"]"#, "duplicate_value", "scopes[1]"),
        (#", "steps": ["export", "rehearse"]"#, "step_requires", "steps"),
        (#", "operator_token": "x""#, "unknown_member", "operator_token"),
        (#", "name": 5"#, "wrong_type", "name"),
        (#", "page_limit": 50"#, "malformed_json", ""),
    ]

    @Test(arguments: invalidFiles)
    func anInvalidFileExitsWithStatus2NamingTheRuleAndMember(_ extra: String, rule: String, member: String) throws {
        let file = try pipelineFile(extra)
        let run = try SeedkitProcess.run(["pipeline", "run", file])
        #expect(run.status == 2)
        #expect(run.stderrText.contains(rule), "\(run.stderrText)")
        #expect(member.isEmpty || run.stderrText.contains(member + ": "), "\(run.stderrText)")
        #expect(run.stdout.isEmpty)
        let json = try SeedkitProcess.run(["pipeline", "run", file, "--json"])
        #expect(json.status == 2)
        let object = try #require(try StrictJSONParser().parse(json.lines.first ?? "").objectValue)
        #expect(object["event"]?.stringValue == "error")
        #expect(object["rule"]?.stringValue == rule)
        #expect(object["member"]?.stringValue == (member.isEmpty ? nil : member))
        #expect(!FileManager.default.fileExists(atPath: publishDirectory))
    }

    @Test func aMissingCredentialVariableOrAnUnloadableDatasetExitsWithStatus2() throws {
        let server = try directory.write("server.json", Array("""
            {"source": {"server": {"url": "http://127.0.0.1:9", "operator_token_env": "SEEDKIT_TEST_UNSET_VARIABLE"}},
             "publish": {"directory": "out/server"}, "steps": ["export"]}
            """.utf8))
        let unset = try SeedkitProcess.run(["pipeline", "run", server])
        #expect(unset.status == 2)
        #expect(unset.stderrText.contains("missing_environment_variable"))
        #expect(unset.stderrText.contains("SEEDKIT_TEST_UNSET_VARIABLE"))

        let missing = try directory.write("missing.json", Array("""
            {"source": {"embedded": {"dataset": "no-such-dataset"}}, "rehearsal": {"user": "alice"},
             "publish": {"directory": "out/missing"}}
            """.utf8))
        let dataset = try SeedkitProcess.run(["pipeline", "run", missing])
        #expect(dataset.status == 2)
        #expect(dataset.stderrText.contains("invalid_dataset") || dataset.stderrText.contains("no-such-dataset"))
    }

    /// A refused connection is transient: once `--retries` are used up (none here) the run exits 4 naming the kind.
    @Test func aServerThatCannotBeReachedExitsWithStatus4NamingTheKind() throws {
        let file = try directory.write("server.json", Array("""
            {"source": {"server": {"url": "http://127.0.0.1:9", "operator_token_env": "SEEDKIT_TEST_OPERATOR"}},
             "publish": {"directory": "out/server"}, "steps": ["export"]}
            """.utf8))
        let run = try SeedkitProcess.run(
            ["pipeline", "run", file, "--retries", "0"], environment: ["SEEDKIT_TEST_OPERATOR": "op-secret-77"])
        #expect(run.status == 4, "\(run.stderrText)")
        #expect(run.stderrText.contains("(connection_refused)"), "\(run.stderrText)")
        #expect(run.stderrText.contains("http://127.0.0.1:9/sync/schema"), "\(run.stderrText)")
        #expect(!run.stderrText.contains("op-secret-77"))
        #expect(!FileManager.default.fileExists(atPath: directory.path("out/server")))
    }

    @Test(arguments: [
        ["pipeline"], ["pipeline", "build", "x.json"], ["pipeline", "run"], ["pipeline", "run", "a.json", "b.json"],
        ["pipeline", "run", "a.json", "--quiet", "--verbose"], ["pipeline", "run", "a.json", "--publish", "x"],
    ])
    func usageErrorsExitWithStatus2(_ arguments: [String]) throws {
        let run = try SeedkitProcess.run(arguments)
        #expect(run.status == 2)
        #expect(run.stderrText.hasPrefix("seedkit: "))
    }
}
