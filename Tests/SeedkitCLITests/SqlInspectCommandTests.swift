import Foundation
import Testing
import _SeedkitTestSupport

/// `seedkit sql` and `seedkit inspect` run as a user runs them, on a client store that `seedkit sync` filled
/// from `seedkit serve`.
@Suite("seedkit sql and inspect")
struct SqlInspectCommandTests {
    /// A client store synced once from a served demo dataset; the server is stopped before the store is used.
    final class SyncedStore {
        let server: SyncCommandTests.ServeProcess
        let path: String

        init() throws {
            server = try SyncCommandTests.ServeProcess(secret: "sql-cli-secret")
            path = server.directory.path("app.db")
            let sync = try SeedkitProcess.run(
                ["sync", "--server", server.url, "--db", path, "--token-file", try server.directory.secretFile("sql-cli-secret")])
            let stopped = server.stop()
            try #require(sync.status == 0, "\(sync.stderrText)")
            try #require(stopped == 0)
        }
    }

    static let noteInsert = "INSERT INTO notes (id, owner_id, title, pinned, updated_at) VALUES (?, ?, ?, ?, ?)"

    @Test("an insert through sql is captured as a pending mutation that inspect shows")
    func insertIsCaptured() throws {
        let store = try SyncedStore()
        let before = try SeedkitProcess.run(["inspect", "--db", store.path, "--json"])
        #expect(before.status == 0, "\(before.stderrText)")
        #expect(before.stdoutText.contains(#""mutations":{"pending":0}"#))

        let insert = try SeedkitProcess.run(
            ["sql", "--db", store.path, Self.noteInsert, "n-cli-1", "alice", "from the CLI", "0",
             "2026-01-01T00:00:00.000Z"])
        #expect(insert.status == 0, "\(insert.stderrText)")
        #expect(insert.stdoutText == "1 row changed\n")

        let read = try SeedkitProcess.run(
            ["sql", "--db", store.path, "--json", "SELECT id, title, pinned FROM notes WHERE id = ?", "n-cli-1"])
        #expect(read.status == 0, "\(read.stderrText)")
        #expect(read.stdoutText == #"{"id":"n-cli-1","pinned":0,"title":"from the CLI"}"# + "\n")

        let after = try SeedkitProcess.run(["inspect", "--db", store.path, "--json"])
        #expect(after.status == 0, "\(after.stderrText)")
        #expect(after.stdoutText.contains(#""mutations":{"pending":1,"unsealed":1}"#))
        #expect(after.stdoutText.contains(#""state":"verified""#))
        #expect(after.stdoutText.contains(#""has_cursor":true"#))

        let text = try SeedkitProcess.run(["inspect", "--db", store.path])
        #expect(text.status == 0, "\(text.stderrText)")
        #expect(text.stdoutText.contains("mutations: 1 pending (unsealed 1)\n"))
    }

    @Test("inspect never prints a cursor token or a seed receipt")
    func inspectHidesSecrets() throws {
        let store = try SyncedStore()
        for arguments in [["inspect", "--db", store.path, "--json"], ["inspect", "--db", store.path]] {
            let run = try SeedkitProcess.run(arguments)
            #expect(run.status == 0, "\(run.stderrText)")
            let output = run.stdoutText + run.stderrText
            #expect(!output.contains("c3."))
            #expect(!output.contains("sc1."))
            #expect(!output.contains("sql-cli-secret"))
        }
    }

    @Test("a read prints an aligned table with a row count")
    func readAsTable() throws {
        let store = try SyncedStore()
        let run = try SeedkitProcess.run(
            ["sql", "--db", store.path, "SELECT ? AS n, ? AS r, ? AS z, ? AS t, x'00ff' AS b", "42", "1.5", "null",
             "007"])
        #expect(run.status == 0, "\(run.stderrText)")
        #expect(run.stdoutText == """
            n   r    z     t    b
            --  ---  ----  ---  ---
            42  1.5  NULL  007  AP8
            (1 row)

            """)
    }

    @Test("a refused statement exits 2 with the rule's name and no SQL literal", arguments: [
        ("DELETE FROM _synchro_meta", "reserved_table_write"),
        ("BEGIN", "transaction_control"),
        ("SELECT 1; SELECT 2", "multiple_statements"),
        ("UPDATE notes SET title = 'leaked-value' WHERE id = 'n' 'leaked-literal'", "sqlite"),
    ])
    func forbiddenStatement(sql: String, rule: String) throws {
        let store = try SyncedStore()
        let run = try SeedkitProcess.run(["sql", "--db", store.path, sql])
        #expect(run.status == 2)
        #expect(run.stderrText.contains("(\(rule))"))
        #expect(!run.stderrText.contains("leaked"))
        #expect(run.stdoutText.isEmpty)
        let inspect = try SeedkitProcess.run(["inspect", "--db", store.path, "--json"])
        #expect(inspect.stdoutText.contains(#""client_id":""#))
    }

    @Test("a store that cannot be opened exits 1; a missing one exits 2 (not_found, as for every command)")
    func unopenableStore() throws {
        let directory = try TemporaryDirectory()
        let garbage = try directory.write("garbage.db", Array(repeating: 0x41, count: 4096))
        for arguments in [["sql", "--db", garbage, "SELECT 1"], ["inspect", "--db", garbage]] {
            let run = try SeedkitProcess.run(arguments)
            #expect(run.status == 1, "\(arguments)")
            #expect(run.stderrText.contains("cannot open the client store"))
        }
        for arguments in [
            ["sql", "--db", directory.path("missing.db"), "SELECT 1"], ["inspect", "--db", directory.path("missing.db")],
        ] {
            let run = try SeedkitProcess.run(arguments)
            #expect(run.status == 2, "\(arguments)")
            #expect(run.stderrText.contains("missing.db: No such file or directory (not_found)"))
        }
        #expect(!FileManager.default.fileExists(atPath: directory.path("missing.db")))
    }

    @Test("usage errors exit 2", arguments: [
        ["sql"],
        ["sql", "--db", "app.db"],
        ["sql", "SELECT 1"],
        ["sql", "--db", "app.db", "--limit", "3", "SELECT 1"],
        ["inspect"],
        ["inspect", "--db", "app.db", "extra"],
        ["inspect", "--db"],
    ])
    func usage(arguments: [String]) throws {
        let run = try SeedkitProcess.run(arguments)
        #expect(run.status == 2)
        #expect(run.stderrText.contains("(usage)\nusage:\n  \(arguments[0]) "), "\(run.stderrText)")
    }
}
