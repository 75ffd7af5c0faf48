import Foundation
import SQLiteKit
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// `seedkit sync` run as a user runs it, against `seedkit serve` in a subprocess.
@Suite("seedkit sync")
struct SyncCommandTests {
    /// A `seedkit serve` subprocess on a free loopback port, stopped with SIGTERM.
    final class ServeProcess {
        let process = Process()
        let directory: TemporaryDirectory
        let url: String

        init(secret: String) throws {
            directory = try TemporaryDirectory()
            process.executableURL = SeedkitProcess.executable
            process.arguments = [
                "serve", "--dataset", RepositoryLayout.root.appendingPathComponent("seeds/demo").path, "--rows",
                "60", "--db", directory.path("server.db"), "--listen", "127.0.0.1:0", "--token-file", try directory.secretFile("alice=\(secret)"),
            ]
            let output = Pipe()
            process.standardOutput = output
            process.standardError = Pipe()
            try process.run()
            url = String(ServeCommandTests.firstLine(of: output).dropFirst("listening on ".count))
        }

        func stop() -> Int32 {
            process.terminate()
            process.waitUntilExit()
            return process.terminationStatus
        }
    }

    @Test("two runs against a served dataset: the first rebuilds, the second verifies without rebuilding")
    func twoRuns() throws {
        let server = try ServeProcess(secret: "alice-cli-secret")
        let database = server.directory.path("app.db")
        let arguments = ["sync", "--server", server.url, "--db", database, "--token-file", try server.directory.secretFile("alice-cli-secret")]

        let first = try SeedkitProcess.run(arguments + ["--page-limit", "25"])
        #expect(first.status == 0, "\(first.stderrText)")
        #expect(first.stdoutText.hasPrefix("synced: "))
        #expect(first.stdoutText.hasSuffix(" rows, 2 scopes verified, 0 mutations pushed\n"))
        #expect(first.stdoutText != "synced: 0 rows, 2 scopes verified, 0 mutations pushed\n")

        let second = try SeedkitProcess.run(arguments + ["--json"])
        #expect(second.status == 0, "\(second.stderrText)")
        let lines = second.stdoutText.split(separator: "\n").map(String.init)
        #expect(!lines.contains { $0.contains(#""phase":"rebuild""#) })
        let summary = try #require(lines.last)
        #expect(summary.contains(#""event":"summary""#))
        #expect(summary.contains(#""requests":{"connect":1,"pull":1,"push":0,"rebuild":0}"#))
        #expect(summary.contains(#""rows_applied":0"#))
        #expect(summary.contains(#""scopes_rebuilt":[]"#))
        #expect(summary.contains(#""scopes_verified":["catalog","user:alice"]"#))
        for output in [first.stdoutText + first.stderrText, second.stdoutText + second.stderrText] {
            #expect(!output.contains("alice-cli-secret"))
        }
        #expect(server.stop() == 0)
    }

    /// The 401 is a refusal of the dispatch table: stored with recovery `retry` (issue #16), so the run exits 3.
    @Test("a wrong token fails with exit 3 and a stored auth error that does not echo the token")
    func wrongToken() throws {
        let server = try ServeProcess(secret: "right-secret")
        let run = try SeedkitProcess.run([
            "sync", "--server", server.url, "--db", server.directory.path("app.db"), "--token-file",
            try server.directory.secretFile("wrong-token-7f3"),
        ])
        #expect(run.status == 3)
        #expect(run.stderrText.contains("auth_required: the server refused the credential"))
        #expect(run.stderrText.contains("with a valid credential: seedkit sync --retry-after-error"))
        #expect(!(run.stderrText + run.stdoutText).contains("wrong-token-7f3"))
        #expect(run.stderrText.contains("the server refused the user credential from the file "), "\(run.stderrText)")
        // The JSON error event names its rule and exit status (issue #18).
        let json = try SeedkitProcess.run([
            "sync", "--server", server.url, "--db", server.directory.path("app.db"), "--token-file",
            try server.directory.secretFile("wrong-token-7f3"), "--json",
        ])
        let last = try StrictJSONParser().parse(Array((json.lines.last ?? "").utf8)).objectValue
        #expect(last?["event"]?.stringValue == "error" && last?["rule"]?.stringValue == "auth_required")
        #expect(last?["exit_status"]?.numberValue?.exactInt64 == Int64(json.status))
        #expect(server.stop() == 0)
    }

    @Test("usage errors exit 2 and never echo the token", arguments: [
        ["sync", "--db", "app.db"],
        ["sync", "--server", "http://127.0.0.1:1"],
        ["sync", "--server", "127.0.0.1:1", "--db", "app.db"],
        ["sync", "--server", "http://127.0.0.1:1", "--db", "app.db", "--page-limit", "0"],
        ["sync", "--server", "http://127.0.0.1:1", "--db", "app.db", "--app-version", "x"],
        ["sync", "--server", "http://127.0.0.1:1", "--db", "app.db", "tok-123"],
    ])
    func usage(arguments: [String]) throws {
        let run = try SeedkitProcess.run(arguments, environment: ["SEEDKIT_TOKEN": "tok-123"])
        #expect(run.status == 2)
        #expect(!run.stderrText.contains("tok-123"))
    }
}

/// A stored blocking error refuses `seedkit sync` before any request until its explicit recovery.
@Suite("seedkit sync: stored blocking error")
struct SyncBlockingErrorCommandTests {
    static func storeBlockingError(_ database: String, recoveryAction: String) throws {
        let connection = try Connection(path: database)
        try connection.run("""
            INSERT INTO _synchro_blocking_error
                (singleton, operation, code, retryable, message, recovery_action, metadata_json, created_at)
            VALUES (1, 'pull', 'sync_integrity_failure', 0, 'sync operation failed', ?, '{}',
                    '2026-01-01T00:00:00.000Z')
            """, [.text(recoveryAction)])
    }

    @Test("a stored retry error refuses sync until --retry-after-error; a schema_reset error is not cleared by it")
    func retryAfterError() throws {
        let server = try SyncCommandTests.ServeProcess(secret: "blocking-secret")
        let database = server.directory.path("app.db")
        let arguments = ["sync", "--server", server.url, "--db", database, "--token-file", try server.directory.secretFile("blocking-secret")]
        let first = try SeedkitProcess.run(arguments)
        #expect(first.status == 0, "\(first.stderrText)")

        try Self.storeBlockingError(database, recoveryAction: "retry")
        let refused = try SeedkitProcess.run(arguments + ["--json"])
        #expect(refused.status == 3)
        #expect(!refused.lines.contains { $0.contains("phase_started") })
        let errorLine = try #require(refused.lines.last.flatMap { try? StrictJSONParser().parse($0).objectValue })
        let stored = try #require(errorLine["blocked"]?.objectValue)
        #expect(stored["recovery_action"]?.stringValue == "retry")
        #expect(stored["code"]?.stringValue == "sync_integrity_failure")
        #expect(stored["operation"]?.stringValue == "pull")
        #expect(refused.stderrText.contains("seedkit sync --retry-after-error"))

        let retried = try SeedkitProcess.run(arguments + ["--retry-after-error", "--json"])
        #expect(retried.status == 0, "\(retried.stderrText)")
        #expect(retried.lines.last?.contains(#""event":"summary""#) == true)
        #expect(try SeedkitProcess.run(arguments).status == 0)

        try Self.storeBlockingError(database, recoveryAction: "schema_reset")
        let stillBlocked = try SeedkitProcess.run(arguments + ["--retry-after-error"])
        #expect(stillBlocked.status == 3)
        #expect(stillBlocked.stderrText.contains("seedkit sync --schema-reset"))
        #expect(server.stop() == 0)
    }
}
