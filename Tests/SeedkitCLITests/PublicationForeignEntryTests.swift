import Foundation
import Glibc
import Testing
import _SeedkitTestSupport

/// Publication never deletes what it did not write (issue #19): a file someone adds to the publish directory while
/// `pipeline run` runs is kept and named, whether it arrives before the exchange (the run fails, the file stays in
/// place) or after it (the swapped-out directory loses only its publication files and is kept beside the publish
/// directory with the file). The run is held at the exact point by `SEEDKIT_CRASH_SIGNAL=STOP`, never by a sleep.
@Suite("seedkit pipeline: foreign entries in the publish directory", .serialized)
struct PublicationForeignEntryTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory(prefix: "seedkit-pipeline-foreign")
    }

    var parent: String { directory.path("out") }
    var publishDirectory: String { directory.path("out/catalog") }
    static let note = Array("someone's notes, not a publication file\n".utf8)

    /// The pipeline file; `rows` changes the inputs so that a second run publishes again.
    func pipelineFile(rows: Int) throws -> String {
        let dataset = RepositoryLayout.root.appendingPathComponent("seeds/demo").path
        return try directory.write("catalog.json", Array("""
            {"source": {"embedded": {"dataset": "\(dataset)", "rows": \(rows)}}, "page_limit": 50,
             "steps": ["export", "verify", "publish"], "publish": {"directory": "out/catalog"}}
            """.utf8))
    }

    func entries(_ path: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: path).sorted()
    }

    /// Publishes once, then starts a second run with other inputs that stops itself at `point`.
    func secondRunStopped(at point: String) throws -> StoppedChild {
        let first = try SeedkitProcess.run(["pipeline", "run", try pipelineFile(rows: 60)])
        try #require(first.status == 0, "\(first.stderrText)")
        let second = try StoppedChild(
            ["pipeline", "run", try pipelineFile(rows: 70)],
            environment: ["SEEDKIT_CRASH_AT": point, "SEEDKIT_CRASH_SIGNAL": "STOP"],
            output: directory.path("second.out"))
        try second.waitUntilStopped()
        return second
    }

    @Test("a file added before the exchange: the run fails naming it, the file and the previous publication stay")
    func addedBeforeTheExchange() throws {
        let second = try secondRunStopped(at: "pipeline.before_exchange")
        defer { second.kill() }
        let sums = FileManager.default.contents(atPath: publishDirectory + "/SHA256SUMS")
        try directory.write("out/catalog/notes.txt", Self.note)

        let status = try second.continueAndWait()

        let output = try String(contentsOfFile: directory.path("second.out"), encoding: .utf8)
        #expect(status != 0, "\(output)")
        #expect(output.contains("publish_directory_not_publication") && output.contains("notes.txt"), "\(output)")
        #expect(!output.contains("someone's notes"))
        #expect(FileManager.default.contents(atPath: publishDirectory + "/notes.txt").map(Array.init) == Self.note)
        #expect(FileManager.default.contents(atPath: publishDirectory + "/SHA256SUMS") == sums)
        #expect(try entries(parent).filter { $0.hasPrefix(".catalog.pipeline-") }.isEmpty)
    }

    @Test("a file added to the swapped-out directory: kept with it beside the publish directory and named")
    func addedAfterTheExchange() throws {
        let second = try secondRunStopped(at: "pipeline.exchanged")
        defer { second.kill() }
        // After the exchange the previous publication is the run's staging directory: a reader that had the publish
        // directory open writes there.
        let scratch = try #require(try entries(parent).first { $0.hasPrefix(".catalog.pipeline-") })
        let previous = "out/\(scratch)/publication"
        #expect(try entries(directory.path(previous)).contains("seed.db"))
        try directory.write("\(previous)/notes.txt", Self.note)

        let status = try second.continueAndWait()

        let output = try String(contentsOfFile: directory.path("second.out"), encoding: .utf8)
        #expect(status == 0, "\(output)")
        #expect(output.contains("warning: foreign_entry_kept: notes.txt"), "\(output)")
        #expect(!output.contains("someone's notes"))
        let kept = try #require(try entries(parent).first { $0.hasPrefix("catalog.kept-") })
        // Only the foreign file is left: the previous publication's own files were removed.
        #expect(try entries(directory.path("out/\(kept)")) == ["notes.txt"])
        #expect(FileManager.default.contents(atPath: directory.path("out/\(kept)/notes.txt")).map(Array.init) == Self.note)
        #expect(try entries(publishDirectory).contains("seed.db") && !(try entries(publishDirectory)).contains("notes.txt"))
        #expect(try entries(parent).filter { $0.hasPrefix(".catalog.pipeline-") }.isEmpty)
    }
}
