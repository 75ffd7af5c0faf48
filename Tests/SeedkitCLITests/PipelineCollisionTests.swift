import Foundation
import Glibc
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// Runs that collide or are cancelled (issue #18, docs/cli.md "Collisions and cancellation"): one run at a time per
/// publish directory (`locked`, exit 5, naming the holder's PID, or `--wait`), SIGINT and SIGTERM stop at a safe
/// point with `interrupted; nothing published` and exit 130, no scratch directory survives, and `pipeline clean`
/// removes what a killed run left. Two real processes; the first is held at an exact point by
/// `SEEDKIT_CRASH_SIGNAL=STOP`, never by a sleep.
@Suite("seedkit pipeline: collisions and cancellation", .serialized)
struct PipelineCollisionTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory(prefix: "seedkit-pipeline-collide")
    }

    var parent: String { directory.path("out") }
    var publishDirectory: String { directory.path("out/catalog") }

    func pipelineFile() throws -> String {
        let dataset = RepositoryLayout.root.appendingPathComponent("seeds/demo").path
        return try directory.write("catalog.json", Array("""
            {"source": {"embedded": {"dataset": "\(dataset)", "rows": 150}}, "page_limit": 50,
             "pack": {"level": 3}, "rehearsal": {"user": "alice"}, "publish": {"directory": "out/catalog"}}
            """.utf8))
    }

    /// The scratch directories of runs beside the publish directory.
    func scratchDirectories() throws -> [String] {
        guard FileManager.default.fileExists(atPath: parent) else { return [] }
        return try FileManager.default.contentsOfDirectory(atPath: parent).filter { $0.hasPrefix(".catalog.pipeline-") }
    }

    /// `SHA256SUMS` of the publication in place, nil when there is none.
    func publishedSums() -> [UInt8]? {
        FileManager.default.contents(atPath: publishDirectory + "/SHA256SUMS").map(Array.init)
    }

    @Test("a second run into a held publish directory exits 5 naming the holder; --wait then finds it up to date")
    func secondRunIsLockedOrWaits() throws {
        let file = try pipelineFile()
        let first = try StoppedChild(
            ["pipeline", "run", file], environment: ["SEEDKIT_CRASH_AT": "pipeline.publish", "SEEDKIT_CRASH_SIGNAL": "STOP"],
            output: directory.path("first.out"))
        defer { first.kill() }
        try first.waitUntilStopped()

        let second = try SeedkitProcess.run(["pipeline", "run", file])
        #expect(second.status == 5, "\(second.status): \(second.stderrText)")
        #expect(second.stderrText.contains("locked by process \(first.pid)") && second.stderrText.contains("(locked)"))
        #expect(second.stdout.isEmpty)
        let json = try SeedkitProcess.run(["pipeline", "run", file, "--json"])
        #expect(json.status == 5)
        let last = try StrictJSONParser().parse(Array((json.lines.last ?? "").utf8)).objectValue
        #expect(last?["rule"]?.stringValue == "locked")
        #expect(last?["exit_status"]?.numberValue?.exactInt64 == 5)
        let clean = try SeedkitProcess.run(["pipeline", "clean", file])
        #expect(clean.status == 5, "clean never touches a live run's scratch: \(clean.stderrText)")
        #expect(try scratchDirectories().count == 1)

        // A waiting run starts while the first is stopped and finishes after it: it finds the publication.
        let waiting = Process()
        waiting.executableURL = SeedkitProcess.executable
        waiting.arguments = ["pipeline", "run", file, "--wait", "600"]
        let waitingOutput = Pipe()
        waiting.standardOutput = waitingOutput
        waiting.standardError = FileHandle.nullDevice
        try waiting.run()
        let status = try first.continueAndWait()
        #expect(status == 0)
        let waited = String(decoding: waitingOutput.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        waiting.waitUntilExit()
        #expect(waiting.terminationStatus == 0)
        #expect(waited.contains("up to date: \(publishDirectory)"), "\(waited)")

        // Exactly one publication, and the SHA-256 the publishing run printed is the file on disk.
        let printed = try String(contentsOfFile: directory.path("first.out"), encoding: .utf8)
        for name in ["seed.db", "seed.db.zst"] {
            let bytes = try #require(FileManager.default.contents(atPath: publishDirectory + "/" + name))
            #expect(printed.contains("\(name) ") && printed.contains("sha256 \(Hex.encode(SHA256.hash(Array(bytes))))"))
        }
        #expect(try scratchDirectories().isEmpty)
    }

    /// Each point is a boundary the run reaches; the signal is raised there, so every case is reproducible.
    @Test("SIGTERM or SIGINT at each step and inside the export stops the run: exit 130, no scratch, nothing published",
          arguments: [
            ("pipeline.export", "TERM"), ("export.page:1", "TERM"), ("export.page:3", "INT"),
            ("pipeline.verify", "TERM"), ("pipeline.pack", "INT"), ("pipeline.install", "TERM"),
            ("pipeline.rehearse", "TERM"), ("pipeline.publish", "TERM"),
          ])
    func signalAtAPointStopsTheRun(point: String, signal: String) throws {
        let file = try pipelineFile()
        let run = try SeedkitProcess.run(
            ["pipeline", "run", file, "--json"], environment: ["SEEDKIT_CRASH_AT": point, "SEEDKIT_CRASH_SIGNAL": signal])
        #expect(run.status == 130, "\(point): \(run.status) \(run.stderrText)")
        #expect(run.stderrText.contains("interrupted; nothing published"))
        let last = try StrictJSONParser().parse(Array((run.lines.last ?? "").utf8)).objectValue
        #expect(last?["event"]?.stringValue == "error" && last?["rule"]?.stringValue == "interrupted")
        #expect(last?["exit_status"]?.numberValue?.exactInt64 == 130)
        #expect(try scratchDirectories().isEmpty, "\(point)")
        #expect(!FileManager.default.fileExists(atPath: publishDirectory), "\(point)")
    }

    @Test("ten SIGTERMs at random moments never leave scratch or a partial publication")
    func randomSignalsNeverLeaveScratchOrAPartialPublication() throws {
        let file = try pipelineFile()
        let initial = try SeedkitProcess.run(["pipeline", "run", file])
        #expect(initial.status == 0, "\(initial.stderrText)")
        var generator = SystemRandomNumberGenerator()
        var interrupted = 0
        for _ in 0..<10 {
            let before = try #require(publishedSums())
            // A random count of file events in the parent directory (and those created in it) is a random moment
            // of the run's own progress.
            let count = Int.random(in: 1...120, using: &generator)
            let run = try HarnessChild.run(
                ["pipeline", "run", file, "--force"], trigger: .fileEvents(directory: parent, count: count),
                signal: SIGTERM)
            #expect(!run.signaled, "the run handles SIGTERM: \(run.stderrText)")
            let after = try #require(publishedSums(), "a publication is always in place")
            if run.status == 130 {
                interrupted += 1
                #expect(run.stderrText.contains("interrupted; nothing published"))
                #expect(after == before, "an interrupted run leaves the previous publication")
            } else {
                #expect(run.status == 0, "\(run.status): \(run.stderrText)")
            }
            // Whatever publication is in place is complete: every file hashes to its SHA256SUMS line.
            let check = try SeedkitProcess.run(["pipeline", "run", file, "--dry-run", "--json"])
            #expect(check.lines.last?.contains("\"up_to_date\":true") == true, "\(check.stdoutText)")
            #expect(try scratchDirectories().isEmpty)
        }
        #expect(interrupted > 0, "at least one signal landed before publication")
    }

    @Test("a killed run's scratch is removed by pipeline clean (and by the next run)")
    func cleanRemovesScratchOfDeadRuns() throws {
        let file = try pipelineFile()
        let killed = try SeedkitProcess.run(["pipeline", "run", file], environment: ["SEEDKIT_CRASH_AT": "pipeline.verify"])
        #expect(killed.status != 0)
        #expect(try scratchDirectories().count == 1)
        let clean = try SeedkitProcess.run(["pipeline", "clean", file, "--json"])
        #expect(clean.status == 0, "\(clean.stderrText)")
        let removed = try StrictJSONParser().parse(Array((clean.lines.last ?? "").utf8)).objectValue?["removed"]
        #expect(removed?.arrayValue?.count == 1)
        #expect(try scratchDirectories().isEmpty)

        let again = try SeedkitProcess.run(["pipeline", "run", file], environment: ["SEEDKIT_CRASH_AT": "pipeline.pack"])
        #expect(again.status != 0)
        #expect(try scratchDirectories().count == 1)
        let next = try SeedkitProcess.run(["pipeline", "run", file])
        #expect(next.status == 0, "\(next.stderrText)")
        #expect(try scratchDirectories().isEmpty)
    }
}
