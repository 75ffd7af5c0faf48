import Foundation
import SQLiteKit
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// `seedkit verify` and `seedkit install` run as a user runs them, on a seed `seedkit export` made from a
/// reference server.
@Suite(.serialized) struct VerifyInstallCommandTests {
    let directory: TemporaryDirectory
    let seed: String

    init() throws {
        let server = try RunningServer(rows: 120)
        directory = try TemporaryDirectory(prefix: "seedkit-verify-cli")
        seed = directory.path("seed.db")
        let export = try SeedkitProcess.run(
            ["export", "--source", server.baseURL, "--out", seed, "--token-env", "TEST_OPERATOR", "--quiet"],
            environment: ["TEST_OPERATOR": RunningServer.operatorToken])
        try #require(export.status == 0, "\(export.stderrText)")
    }

    /// The JSON report of `verify --json` or `install --json`.
    func report(_ outcome: SeedkitProcess.Outcome) throws -> JSONObject {
        let json = try StrictJSONParser().parse(Array(outcome.stdout.dropLast()))
        #expect(outcome.stdout.last == 0x0A)
        return try #require(json.objectValue)
    }

    func checks(_ report: JSONObject) -> [String] {
        (report["findings"]?.arrayValue ?? []).compactMap { $0.objectValue?["check"]?.stringValue }
    }

    @Test func aCleanSeedVerifiesWithExitZero() throws {
        let text = try SeedkitProcess.run(["verify", seed])
        #expect(text.status == 0, "\(text.stdoutText)\(text.stderrText)")
        #expect(text.stdoutText.hasPrefix("ok: seed verified ("))

        let json = try SeedkitProcess.run(["verify", seed, "--json"])
        #expect(json.status == 0)
        let object = try report(json)
        #expect(object.keys.sorted() == ["checks", "findings", "ok", "rows"])
        #expect(object["ok"] == .bool(true))
        #expect(object["findings"] == .array([]))
        #expect((object["rows"]?.numberValue?.exactInt64 ?? 0) > 120)
    }

    @Test func aTamperedSeedFailsWithExitOneAndNamesTheCheck() throws {
        #expect(FileManager.default.createFile(atPath: seed + "-wal", contents: Data([1, 2, 3])))
        let json = try SeedkitProcess.run(["verify", seed, "--json"])
        #expect(json.status == 1)
        let object = try report(json)
        #expect(object["ok"] == .bool(false))
        #expect(checks(object).contains("sidecar_present"))

        let text = try SeedkitProcess.run(["verify", seed])
        #expect(text.status == 1)
        #expect(text.stdoutText.contains("FAIL sidecar_present"))

        let install = try SeedkitProcess.run(["install", seed, "--to", directory.path("app.db"), "--json"])
        #expect(install.status == 1)
        #expect(checks(try report(install)).contains("sidecar_present"))
        #expect(!FileManager.default.fileExists(atPath: directory.path("app.db")))
    }

    @Test func installPublishesOnceAndRefusesAnExistingDatabase() throws {
        let destination = directory.path("app.db")
        let first = try SeedkitProcess.run(["install", seed, "--to", destination])
        #expect(first.status == 0, "\(first.stdoutText)\(first.stderrText)")
        #expect(first.stdoutText.hasPrefix("ok: installed \(destination) ("))
        let installed = try Data(contentsOf: URL(fileURLWithPath: destination))

        let second = try SeedkitProcess.run(["install", seed, "--to", destination, "--json"])
        #expect(second.status == 2)
        let error = try StrictJSONParser().parse(Array(second.stdout.dropLast()))
        #expect(error.objectValue?["error"]?.objectValue?["rule"]?.stringValue == "destination_exists")
        #expect(try Data(contentsOf: URL(fileURLWithPath: destination)) == installed)
    }

    @Test func unusableInputAndUsageErrorsExitWithStatusTwo() throws {
        let truncated = directory.path("truncated.db")
        let bytes = try Data(contentsOf: URL(fileURLWithPath: seed))
        try bytes.prefix(bytes.count / 2 + 512).write(to: URL(fileURLWithPath: truncated))
        let verify = try SeedkitProcess.run(["verify", truncated, "--json"])
        #expect(verify.status == 2)
        let error = try StrictJSONParser().parse(Array(verify.stdout.dropLast()))
        #expect(error.objectValue?["error"]?.objectValue?["rule"]?.stringValue == "truncated")
        #expect(try SeedkitProcess.run(["install", truncated, "--to", directory.path("app.db")]).status == 2)
        #expect(!FileManager.default.fileExists(atPath: directory.path("app.db")))

        #expect(try SeedkitProcess.run(["verify"]).status == 2)
        #expect(try SeedkitProcess.run(["verify", seed, "--bogus"]).status == 2)
        #expect(try SeedkitProcess.run(["install", seed]).status == 2)
        #expect(try SeedkitProcess.run(["verify", directory.path("absent.db")]).status == 2)
    }

    /// The pack error's rule appears once in the message ("checksum_mismatch: checksum_mismatch: …" before).
    @Test func aDamagedFrameIsReportedWithItsRuleOnce() throws {
        let frame = directory.path("damaged.db.zst")
        let pack = try SeedkitProcess.run(["pack", seed, "--out", frame, "--level", "1", "--quiet"])
        #expect(pack.status == 0, "\(pack.stderrText)")
        // The last four octets are the frame's content checksum.
        var bytes = Array(try Data(contentsOf: URL(fileURLWithPath: frame)))
        bytes[bytes.count - 1] ^= 0xFF
        try Data(bytes).write(to: URL(fileURLWithPath: frame))

        let verify = try SeedkitProcess.run(["verify", frame])
        #expect(verify.status == 2)
        #expect(verify.stderrText == "seedkit: \(frame): cannot be unpacked (checksum_mismatch: the decompressed "
            + "content does not match the frame's content checksum) (unpack_failed)\n")
        let json = try SeedkitProcess.run(["verify", frame, "--json"])
        let error = try StrictJSONParser().parse(Array(json.stdout.dropLast())).objectValue?["error"]?.objectValue
        #expect(error?["rule"]?.stringValue == "unpack_failed")
        #expect(error?["message"]?.stringValue == "\(frame): cannot be unpacked (checksum_mismatch: the decompressed "
            + "content does not match the frame's content checksum)")
    }
}

/// Errors that say what to fix (issue #18): a plain SQLite file is one finding, "not a Synchro seed", exit 2 (not a
/// FAIL line per missing table); an install whose destination directory cannot take files names the directory and
/// the OS reason and exits 1, instead of calling the seed unusable.
@Suite struct SeedInputErrorTests {
    @Test func aPlainSQLiteFileIsOneFindingNotASynchroSeed() throws {
        let directory = try TemporaryDirectory()
        let plain = directory.path("plain.db")
        let connection = try Connection(path: plain)
        try connection.run("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
        for command in [["verify", plain], ["install", plain, "--to", directory.path("app.db")]] {
            let run = try SeedkitProcess.run(command)
            #expect(run.status == 2, "\(command): \(run.status)")
            #expect(run.stdoutText.isEmpty, "\(command): \(run.stdoutText)")
            #expect(run.stderrText == "seedkit: \(plain) is not a Synchro seed: it has no _synchro_meta table (the seed "
                + "layout of spec/seed-format.md §2); nothing was checked further (not_a_seed)\n", "\(run.stderrText)")
            let json = try SeedkitProcess.run(command + ["--json"])
            #expect(json.lines.count == 1 && json.stdoutText.contains("\"rule\":\"not_a_seed\""))
        }
        #expect(!FileManager.default.fileExists(atPath: directory.path("app.db")))
    }

    @Test func anInstallIntoADirectoryThatCannotTakeFilesNamesItAndTheReason() throws {
        let server = try RunningServer(rows: 20)
        let directory = try TemporaryDirectory()
        let seed = directory.path("seed.db")
        let export = try SeedkitProcess.run(
            ["export", "--source", server.baseURL, "--out", seed, "--quiet"],
            environment: ["SEEDKIT_OPERATOR_TOKEN": RunningServer.operatorToken])
        try #require(export.status == 0, "\(export.stderrText)")
        for (destination, reason) in [
            (directory.path("absent/app.db"), "No such file or directory"), (seed + "/app.db", "Not a directory"),
        ] {
            let run = try SeedkitProcess.run(["install", seed, "--to", destination])
            #expect(run.status == 1, "\(run.stderrText)")
            #expect(run.stderrText.contains(": \(reason) (io)") && !run.stderrText.contains("unusable"), "\(run.stderrText)")
        }
    }
}
