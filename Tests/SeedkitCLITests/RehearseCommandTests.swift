import Foundation
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// `seedkit rehearse` as a user runs it: a seed exported from a running server, installed and synced as a device.
@Suite(.serialized) struct RehearseCommandTests {
    let server: RunningServer
    let directory: TemporaryDirectory
    static let credentials = ["SEEDKIT_TEST_OPERATOR": RunningServer.operatorToken, "SEEDKIT_TEST_USER": "secret-alice"]

    init() throws {
        server = try RunningServer(rows: 120)
        directory = try TemporaryDirectory(prefix: "seedkit-rehearse-cli")
    }

    /// `seedkit export` of `server` into `name`.
    func exportedSeed(from server: RunningServer, _ name: String = "seed.db") throws -> String {
        let path = directory.path(name)
        let run = try SeedkitProcess.run(
            ["export", "--source", server.baseURL, "--out", path, "--token-env", "SEEDKIT_TEST_OPERATOR", "--quiet"],
            environment: Self.credentials)
        #expect(run.status == 0, "\(run.stderrText)")
        return path
    }

    func rehearse(
        _ seed: String, _ extra: [String] = [], token: String = "SEEDKIT_TEST_USER"
    ) throws -> SeedkitProcess.Outcome {
        try SeedkitProcess.run(
            ["rehearse", seed, "--server", server.baseURL, "--token-env", token] + extra, environment: Self.credentials)
    }

    @Test func aFreshSeedContinuesAndTheDeviceExperienceIsPrinted() throws {
        let seed = try exportedSeed(from: server)
        let before = try Data(contentsOf: URL(fileURLWithPath: seed))
        let run = try rehearse(seed, ["--rebuild-compare"])
        #expect(run.status == 0, "\(run.stderrText)")
        #expect(run.stdoutText.contains("catalog"))
        #expect(run.stdoutText.contains("continued, verified, matches rebuild"))
        #expect(run.stdoutText.contains("first sync: 1 connect"))
        #expect(run.stdoutText.contains("without the seed: "))
        #expect(run.lines.last == "rehearsal passed: every seeded scope continued from the seed and verified")
        #expect(!run.stdoutText.contains("secret-alice") && !run.stderrText.contains("secret-alice"))
        #expect(!run.stderrText.contains("\r") && !run.stderrText.contains("\u{1B}"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: seed)) == before, "the seed file is only read")
    }

    @Test func aPackedSeedIsRehearsedAndJSONCarriesEveryScopesOutcome() throws {
        let seed = try exportedSeed(from: server)
        let pack = try SeedkitProcess.run(["pack", seed, "--level", "3"])
        #expect(pack.status == 0, "\(pack.stderrText)")
        let run = try rehearse(seed + ".zst", ["--json"])
        #expect(run.status == 0, "\(run.stderrText)")
        let text = try #require(run.lines.last)
        let object = try #require(try StrictJSONParser().parse(text).objectValue)
        #expect(try CanonicalJSON.string(.object(object)) == text)
        #expect(object["passed"]?.boolValue == true)
        let scopes = (object["scopes"]?.arrayValue ?? []).compactMap { $0.objectValue }
        #expect(scopes.map { $0["id"]?.stringValue } == ["catalog"])
        #expect(scopes.first?["continued"]?.boolValue == true)
        #expect(scopes.first?["seeded_rows"]?.numberValue?.exactInt64 == 160)
        let requests = object["first_sync"]?.objectValue?["requests"]?.objectValue
        #expect(requests?["connect"]?.numberValue?.exactInt64 == 1)
    }

    @Test func aSeedFromAnotherServerIsNotContinuedAndExitsWithStatus1() throws {
        let other = try RunningServer(rows: 120)
        let seed = try exportedSeed(from: other, "other.db")
        let run = try rehearse(seed)
        #expect(run.status == 1, "\(run.stdoutText)")
        #expect(run.stdoutText.contains("not continued"))
        #expect(run.lines.last?.hasPrefix("rehearsal failed") == true)
    }

    @Test func aRefusedCredentialExitsWithStatus1WithoutEchoingIt() throws {
        let seed = try exportedSeed(from: server)
        let run = try SeedkitProcess.run(
            ["rehearse", seed, "--server", server.baseURL, "--token-env", "WRONG"],
            environment: ["WRONG": "wrong-secret-31"])
        #expect(run.status == 1)
        #expect(run.stderrText.hasPrefix("seedkit: rehearse failed: "))
        #expect(!run.stderrText.contains("wrong-secret-31"))
    }

    @Test func anUnreachableServerIsRetriedVisiblyThenExits4NamingTheKindAndURL() throws {
        let seed = try exportedSeed(from: server)
        let port = try SilentListener.refusedPort()
        let run = try SeedkitProcess.run(
            ["rehearse", seed, "--server", "http://127.0.0.1:\(port)", "--token-env", "SEEDKIT_TEST_USER",
             "--retries", "1", "--json"],
            environment: Self.credentials.merging(["SEEDKIT_TEST_RETRY_WAIT_MS": "0"]) { _, new in new })
        #expect(run.status == 4, "\(run.status): \(run.stderrText)")
        #expect(run.stderrText.contains(
            "rehearse: attempt 1 of 2 failed: connection_refused at http://127.0.0.1:\(port)/sync/connect"))
        let error = try #require(run.lines.last.flatMap { try StrictJSONParser().parse(Array($0.utf8)).objectValue })
        #expect(error["error"]?.objectValue?["rule"]?.stringValue == "retries_exhausted", "\(run.stdoutText)")
        #expect(run.stderrText.contains("(retries_exhausted)") && run.stderrText.contains("connection_refused"))
    }

    @Test func usageErrorsAndUnusableFilesExitWithStatus2() throws {
        let seed = try exportedSeed(from: server)
        let notASeed = try directory.write("notes.txt", Array("not a database".utf8))
        let cases: [[String]] = [
            ["rehearse"],
            ["rehearse", seed],
            ["rehearse", seed, "--server", server.baseURL],
            ["rehearse", seed, "--server", "ftp://host", "--token-env", "SEEDKIT_TEST_USER"],
            ["rehearse", seed, "--server", server.baseURL, "--token-env", "SEEDKIT_TEST_UNSET_VARIABLE"],
            ["rehearse", directory.path("absent.db"), "--server", server.baseURL, "--token-env", "SEEDKIT_TEST_USER"],
            ["rehearse", notASeed, "--server", server.baseURL, "--token-env", "SEEDKIT_TEST_USER"],
        ]
        for arguments in cases {
            let run = try SeedkitProcess.run(arguments, environment: Self.credentials)
            #expect(run.status == 2, "\(arguments)")
            #expect(run.stderrText.hasPrefix("seedkit: "), "\(arguments)")
        }
    }
}
