import Foundation
import Glibc
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// One export per destination at a time, and a cancelled export (issue #18): a second `export --out` to a destination
/// another export holds exits 5 naming the holder's PID; SIGTERM or SIGINT during the export ends it at the next page
/// with exit 130 and leaves no seed, evidence or temporary behind.
@Suite("seedkit export: collisions and cancellation", .serialized)
struct ExportCollisionTests {
    let server: RunningServer
    let directory: TemporaryDirectory

    init() throws {
        server = try RunningServer(rows: 150)
        directory = try TemporaryDirectory(prefix: "seedkit-export-collide")
    }

    var arguments: [String] {
        ["export", "--source", server.baseURL, "--out", directory.path("seed.db"), "--page-limit", "40"]
    }
    let environment = ["SEEDKIT_OPERATOR_TOKEN": RunningServer.operatorToken]

    @Test("a second export to a held destination exits 5 naming the holder; the first then publishes")
    func secondExportIsLocked() throws {
        let first = try StoppedChild(
            arguments, environment: environment.merging(["SEEDKIT_CRASH_AT": "export.page:2", "SEEDKIT_CRASH_SIGNAL": "STOP"]) { $1 },
            output: directory.path("first.out"))
        defer { first.kill() }
        try first.waitUntilStopped()
        let second = try SeedkitProcess.run(arguments + ["--json"], environment: environment)
        #expect(second.status == 5, "\(second.status): \(second.stderrText)")
        let error = try StrictJSONParser().parse(second.stdout).objectValue?["error"]?.objectValue
        #expect(error?["rule"]?.stringValue == "locked")
        #expect(error?["message"]?.stringValue?.contains("process \(first.pid)") == true)
        #expect(error?["exit_status"]?.numberValue?.exactInt64 == 5)
        // With --json the text still goes to standard error with its rule, as for every command.
        #expect(second.stderrText.contains("(locked)"), "\(second.stderrText)")
        #expect(try first.continueAndWait() == 0)
        #expect(FileManager.default.fileExists(atPath: directory.path("seed.db")))
    }

    @Test("SIGTERM or SIGINT during the export: exit 130, interrupted, nothing left behind",
          arguments: [("export.page:1", "TERM"), ("export.page:3", "INT")])
    func signalStopsTheExport(point: String, signal: String) throws {
        let outcome = try SeedkitProcess.run(
            arguments, environment: environment.merging(["SEEDKIT_CRASH_AT": point, "SEEDKIT_CRASH_SIGNAL": signal]) { $1 })
        #expect(outcome.status == 130, "\(outcome.status): \(outcome.stderrText)")
        #expect(outcome.stderrText.contains("interrupted; nothing published"))
        let left = try FileManager.default.contentsOfDirectory(atPath: directory.url.path).filter { !$0.hasSuffix(".lock") }
        #expect(left.isEmpty, "\(left)")
    }
}
