import Foundation
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// `pipeline run --dry-run` fails (exit 1) when a run would: here a publish directory whose parent is a regular file
/// (root ignores permissions, so unwritability is shown this way); the check's rule closes the output in text and
/// JSON, and nothing is written.
@Suite("seedkit: pipeline run --dry-run checks what a run needs")
struct PipelineDryRunCLITests {
    @Test("a publish parent under a regular file fails the dry run with publish_parent_unusable")
    func unusablePublishParent() throws {
        let directory = try TemporaryDirectory()
        let dataset = RepositoryLayout.root.appendingPathComponent("seeds/demo").path
        _ = try directory.write("blocker", Array("a file".utf8))
        let file = try directory.write("pipeline.json", Array("""
            {"name": "tiny", "source": {"embedded": {"dataset": "\(dataset)", "rows": 20}},
             "rehearsal": {"user": "alice"}, "publish": {"directory": "blocker/out"}}
            """.utf8))
        let json = try SeedkitProcess.run(["pipeline", "run", file, "--dry-run", "--json"])
        #expect(json.status == 1, "\(json.stderrText)")
        let last = try #require(json.lines.last.flatMap { try StrictJSONParser().parse(Array($0.utf8)).objectValue })
        #expect(last["event"]?.stringValue == "error")
        #expect(last["rule"]?.stringValue == "publish_parent_unusable")
        #expect(last["member"]?.stringValue == "publish_parent")
        let text = try SeedkitProcess.run(["pipeline", "run", file, "--dry-run"])
        #expect(text.status == 1)
        #expect(text.stdoutText.contains("FAIL  publish_parent: "))
        #expect(text.stderrText.contains("(publish_parent_unusable)"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path).sorted()
            == ["blocker", "pipeline.json"])
    }

    @Test("pipeline validate checks a file with --set and SEEDKIT_PIPELINE_ overrides, refusing unknown keys by name")
    func validateWithOverrides() throws {
        let directory = try TemporaryDirectory()
        let dataset = RepositoryLayout.root.appendingPathComponent("seeds/demo").path
        let file = try directory.write("pipeline.json", Array("""
            {"name": "tiny", "source": {"embedded": {"dataset": "\(dataset)", "rows": 20}},
             "rehearsal": {"user": "alice"}, "publish": {"directory": "out"}}
            """.utf8))
        let valid = try SeedkitProcess.run(
            ["pipeline", "validate", file, "--set", "publish.directory=elsewhere", "--json"])
        #expect(valid.status == 0, "\(valid.stderrText)")
        let object = try #require(valid.lines.last.flatMap { try StrictJSONParser().parse(Array($0.utf8)).objectValue })
        #expect(object["event"]?.stringValue == "valid")
        #expect(object["publish_directory"]?.stringValue == directory.path("elsewhere"))

        let unknown = try SeedkitProcess.run(
            ["pipeline", "validate", file, "--set", "source.embedded.rowz=5", "--json"])
        #expect(unknown.status == 2)
        #expect(unknown.lines.last?.contains("\"rule\":\"unknown_member\"") == true, "\(unknown.stdoutText)")
        #expect(unknown.stderrText.contains("source.embedded.rowz"))

        let typed = try SeedkitProcess.run(["pipeline", "validate", file, "--set", "page_limit=lots"])
        #expect(typed.status == 2 && typed.stderrText.contains("page_limit"))
        #expect(typed.stderrText.contains("(wrong_type)"))

        let environment = try SeedkitProcess.run(
            ["pipeline", "validate", file], environment: ["SEEDKIT_PIPELINE_PAGE_LIMIT": "5000"])
        #expect(environment.status == 2, "\(environment.stderrText)")
        #expect(environment.stderrText.contains("(out_of_range)"), "\(environment.stderrText)")

        // The same overrides reach pipeline run: a dry run into the overridden directory writes nothing there.
        let dry = try SeedkitProcess.run(["pipeline", "run", file, "--dry-run", "--set", "page_limit=1001"])
        #expect(dry.status == 2 && dry.stderrText.contains("page_limit"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path) == ["pipeline.json"])
    }
}
