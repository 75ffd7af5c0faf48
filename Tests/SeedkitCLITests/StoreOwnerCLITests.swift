import Foundation
import Glibc
import Testing
import _SeedkitTestSupport

/// One owner per store, across real processes (seed 002, issue #16 item 5; docs/cli.md "One owner per store"): while
/// one `seedkit sync` holds a store, a second `sync` and an `inspect` are refused at once with `store_in_use`, the
/// holder's PID and exit status 5; when the holder dies the kernel drops its lock and the store opens again.
@Suite("seedkit: one owner per store, two processes", .serialized)
struct StoreOwnerCLITests {
    @Test("a second sync and an inspect on a store another sync holds exit 5 at once, naming the holder")
    func secondProcessIsRefused() throws {
        let directory = try TemporaryDirectory(prefix: "store-owner")
        let database = directory.path("app.db")
        // A server that accepts the connection and never answers: the first sync holds the store, without a
        // sleep, from the moment its request arrives until the test kills it.
        let listener = try SilentListener()
        defer { listener.close() }
        let holder = Process()
        holder.executableURL = SeedkitProcess.executable
        holder.arguments = ["sync", "--server", "http://127.0.0.1:\(listener.port)", "--db", database, "--token-file", try directory.secretFile("t")]
        holder.standardInput = FileHandle.nullDevice
        holder.standardOutput = FileHandle.nullDevice
        holder.standardError = FileHandle.nullDevice
        try holder.run()
        defer {
            kill(holder.processIdentifier, SIGKILL)
            holder.waitUntilExit()
        }
        let connection = try listener.acceptOne(timeoutMilliseconds: 120_000)
        defer { Glibc.close(connection) }

        let pid = holder.processIdentifier
        let second = try SeedkitProcess.run(
            ["sync", "--server", "http://127.0.0.1:\(listener.port)", "--db", database, "--token-file", try directory.secretFile("t")])
        #expect(second.status == 5, "\(second.status): \(second.stderrText)")
        #expect(second.stderrText.contains("store_in_use") && second.stderrText.contains("process \(pid)"))
        let inspected = try SeedkitProcess.run(["inspect", "--db", database, "--json"])
        #expect(inspected.status == 5, "\(inspected.status): \(inspected.stderrText)")
        #expect(inspected.stderrText.contains("store_in_use") && inspected.stderrText.contains("process \(pid)"))
        #expect(inspected.lines.count == 1 && inspected.stdoutText.contains("\"rule\":\"store_in_use\""))

        // A killed owner leaves no lock behind.
        kill(pid, SIGKILL)
        holder.waitUntilExit()
        let after = try SeedkitProcess.run(["inspect", "--db", database, "--json"])
        #expect(after.status == 0, "\(after.stderrText)")
    }
}
