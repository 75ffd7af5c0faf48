import Foundation
import Testing
import _SeedkitTestSupport

/// A kill at any boundary of `seedkit install` leaves no database at the destination, or a complete one.
@Suite(.serialized) struct InstallCrashTests {
    static func exportedSeed(in directory: TemporaryDirectory) throws -> String {
        let server = try RunningServer(rows: 120)
        let seed = directory.path("seed.db")
        let export = try SeedkitProcess.run(
            ["export", "--source", server.baseURL, "--out", seed],
            environment: ["SEEDKIT_OPERATOR_TOKEN": RunningServer.operatorToken])
        #expect(export.status == 0, "\(export.stderrText)")
        return seed
    }

    @Test(arguments: ["install.copied", "install.migrated", "install.validated"])
    func aKillBeforePublicationInstallsNothing(point: String) throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-install-crash")
        let seed = try Self.exportedSeed(in: directory)
        let app = directory.path("app.db")
        let killed = try SeedkitProcess.run(["install", seed, "--to", app], environment: ["SEEDKIT_CRASH_AT": point])
        #expect(killed.status == SIGKILL)
        for suffix in ["", "-wal", "-shm", "-journal"] {
            #expect(!FileManager.default.fileExists(atPath: app + suffix), "\(suffix)")
        }
        // The device's next start installs normally beside whatever temporary the killed one left.
        let again = try SeedkitProcess.run(["install", seed, "--to", app])
        #expect(again.status == 0, "\(again.stderrText)")
    }

    @Test func aKillRightAfterPublicationLeavesAnInstalledDatabase() throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-install-crash")
        let seed = try Self.exportedSeed(in: directory)
        let app = directory.path("app.db")
        let killed = try SeedkitProcess.run(
            ["install", seed, "--to", app], environment: ["SEEDKIT_CRASH_AT": "install.published"])
        #expect(killed.status == SIGKILL)
        let validate = try SeedkitProcess.run(["validate", "--db", app])
        #expect(validate.status == 0, "\(validate.stdoutText)\(validate.stderrText)")
        #expect(try SeedkitProcess.run(["install", seed, "--to", app]).status == 2)
    }
}
