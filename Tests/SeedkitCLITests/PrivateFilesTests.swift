import Foundation
import Testing
import _SeedkitTestSupport

/// Private by default (issue #19): what `seedkit` creates for itself is readable by its owner only.
@Suite("private files")
struct PrivateFilesTests {
    static func mode(_ path: String) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        return (attributes[.posixPermissions] as? NSNumber)?.intValue ?? -1
    }

    @Test("serve without --db keeps its database in a 0700 directory, the file 0600, and removes it on exit")
    func serveDefaultDatabaseIsPrivateAndRemoved() throws {
        let temporary = try TemporaryDirectory()
        let process = Process()
        process.executableURL = SeedkitProcess.executable
        process.arguments = [
            "serve", "--dataset", RepositoryLayout.root.appendingPathComponent("seeds/demo").path, "--rows", "20",
            "--listen", "127.0.0.1:0", "--token-file", try temporary.secretFile("alice=private-serve-secret"),
        ]
        process.environment = ProcessInfo.processInfo.environment.merging(["TMPDIR": temporary.url.path]) { $1 }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = Pipe()
        try process.run()
        #expect(ServeCommandTests.firstLine(of: output).hasPrefix("listening on "))

        let entries = try FileManager.default.contentsOfDirectory(atPath: temporary.url.path)
        let scratch = try #require(entries.first { $0.hasPrefix("seedkit-serve-") }, "\(entries)")
        let directory = temporary.path(scratch)
        #expect(try Self.mode(directory) == 0o700)
        #expect(try Self.mode(directory + "/server.db") == 0o600)

        process.terminate()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        #expect(!FileManager.default.fileExists(atPath: directory), "the private directory was left behind")
    }

    @Test("a client store created by sync is 0600 whatever the umask, its WAL too")
    func clientStoreIsPrivate() throws {
        let server = try SyncCommandTests.ServeProcess(secret: "private-secret")
        defer { _ = server.stop() }
        let database = server.directory.path("app.db")
        let run = try SeedkitProcess.run(["sync", "--server", server.url, "--db", database, "--token-file",
            try server.directory.secretFile("private-secret")])
        #expect(run.status == 0, "\(run.stderrText)")
        #expect(try Self.mode(database) == 0o600)
        for suffix in ["-wal", "-shm"] where FileManager.default.fileExists(atPath: database + suffix) {
            #expect(try Self.mode(database + suffix) == 0o600)
        }
        #expect(try Self.mode(server.directory.path("server.db")) == 0o600)
    }
}
