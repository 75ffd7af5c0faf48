import Foundation
import SQLiteKit
import Testing
import _SeedkitTestSupport

/// A `seedkit serve` killed while it bulk-loads a new store leaves no store, only its partial file; the next start
/// discards that file and loads the store completely (docs/decisions.md, "The first load of a SQLite store is a bulk
/// load into a file of its own").
@Suite(.serialized) struct ServeLoadCrashTests {
    static let rows = 5000

    static func serveArguments(_ database: String, _ directory: TemporaryDirectory) throws -> [String] {
        [
            "serve", "--dataset", RepositoryLayout.root.appendingPathComponent("seeds/demo").path,
            "--rows", String(rows), "--db", database, "--listen", "127.0.0.1:0",
            "--token-file", try directory.secretFile("alice=load-crash-secret"),
        ]
    }

    @Test(arguments: ["server.load.batch:2", "server.load.before-publish"])
    func aKillDuringTheLoadLeavesNoStoreAndTheNextStartLoads(point: String) throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-load-crash")
        let database = directory.path("server.db")
        let killed = try SeedkitProcess.run(
            try Self.serveArguments(database, directory), environment: ["SEEDKIT_CRASH_AT": point])
        #expect(killed.status == SIGKILL, "\(killed.stderrText)")
        #expect(!FileManager.default.fileExists(atPath: database), "a store appeared before its load completed")
        #expect(FileManager.default.fileExists(atPath: database + ".loading"))

        let process = Process()
        process.executableURL = SeedkitProcess.executable
        process.arguments = try Self.serveArguments(database, directory)
        let output = Pipe()
        process.standardOutput = output
        process.standardError = Pipe()
        try process.run()
        #expect(ServeCommandTests.firstLine(of: output).hasPrefix("listening on "))
        process.terminate()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)

        #expect(!FileManager.default.fileExists(atPath: database + ".loading"))
        #expect(!FileManager.default.fileExists(atPath: database + ".loading-lock"))
        let store = try Connection(path: database, mode: .readOnly)
        let rows = try store.scalar("SELECT count(*) FROM source_rows")?.integerValue ?? 0
        #expect(rows >= Int64(Self.rows))
        #expect(try store.scalar("SELECT count(*) FROM projection")?.integerValue == rows)
        #expect(try store.scalar("PRAGMA integrity_check")?.textValue == "ok")
    }
}
