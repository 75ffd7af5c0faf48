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
}
