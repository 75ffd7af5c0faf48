import Foundation
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// `seedkit validate` as a user runs it, on stores that `seedkit sync` filled from an in-process server.
@Suite("seedkit validate", .serialized)
struct ValidateCommandTests {
    let world: DeviceWorld
    let device: String

    init() throws {
        world = try DeviceWorld(rows: 30)
        device = world.database("device.db")
        try world.expectSuccess(world.sync(device, pageLimit: 25))
    }

    func validate(_ extra: [String] = [], database: String? = nil) throws -> SeedkitProcess.Outcome {
        try world.run(["validate", "--db", database ?? device] + extra)
    }

    var online: [String] { ["--server", world.server.baseURL, "--token-env", "SEEDKIT_TEST_TOKEN"] }

    @Test("a synced store validates offline and matches the server's checksums online")
    func syncedStoreValidates() throws {
        let offline = try validate()
        #expect(offline.status == 0, "\(offline.stdoutText)")
        #expect(offline.lines == [
            "scope catalog: 70 rows, digest verified", "scope user:alice: 60 rows, digest verified",
            "ok: the client store is consistent",
        ])
        let run = try validate(online + ["--json"])
        #expect(run.status == 0, "\(run.stdoutText)\(run.stderrText)")
        let object = try Self.object(run)
        #expect(object["valid"] == .bool(true))
        #expect(object["findings"] == .array([]))
        let scopes = (object["scopes"]?.arrayValue ?? []).compactMap(\.objectValue)
        #expect(scopes.map { $0["scope_id"]?.stringValue } == ["catalog", "user:alice"])
        #expect(scopes.allSatisfy { $0["digest_verified"] == .bool(true) && $0["server"] == .string("matches") })
        #expect(!(run.stdoutText + run.stderrText).contains("secret-alice"))
    }

    @Test("an unreachable server is the finding server_comparison_failed.connection_refused naming the URL")
    func unreachableServer() throws {
        let port = try SilentListener.refusedPort()
        let run = try validate(
            ["--server", "http://127.0.0.1:\(port)", "--token-env", "SEEDKIT_TEST_TOKEN", "--retries", "0", "--json"])
        #expect(run.status == 1, "\(run.stdoutText)\(run.stderrText)")
        let text = run.stdoutText
        #expect(text.contains("server_comparison_failed.connection_refused"), "\(text)")
        #expect(text.contains("http://127.0.0.1:\(port)/sync/pull"), "\(text)")
    }

    @Test("a row edited in the file is a row digest finding with exit 1, and a rebuild of its scope repairs it")
    func tamperedRow() throws {
        let line = try #require(try world.rows(
            "SELECT title FROM notes WHERE length(title) > 6 AND title GLOB '[A-Za-z]*' ORDER BY id LIMIT 1", device
        ).first)
        let title = try #require(try StrictJSONParser().parse(line).objectValue?["title"]?.stringValue)
        try Self.tamper(device, replacing: title)
        let before = try Data(contentsOf: URL(fileURLWithPath: device))

        let run = try validate(["--json"])
        #expect(run.status == 1)
        let object = try Self.object(run)
        #expect(object["valid"] == .bool(false))
        let findings = (object["findings"]?.arrayValue ?? []).compactMap(\.objectValue)
        #expect(findings.map { $0["rule"]?.stringValue } == ["row_digest_mismatch", "scope_digest_mismatch"])
        #expect(findings.allSatisfy { $0["scope"] == .string("user:alice") })
        #expect(findings.first?["table"] == .string("notes"))
        #expect(!run.stdoutText.contains(title), "a finding never prints a row value")

        let text = try validate()
        #expect(text.status == 1)
        #expect(text.lines.contains(
            "FAIL row_digest_mismatch: scope user:alice: 1 row(s) of notes no longer match their stored row digest"))
        #expect(text.lines.last == "2 finding(s)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: device)) == before, "validate only reads")

        let rebuild = try world.run(
            ["rebuild", "--db", device, "--scope", "user:alice", "--server", world.server.baseURL, "--token-env",
             "SEEDKIT_TEST_TOKEN"])
        #expect(rebuild.status == 0, "\(rebuild.stderrText)")
        #expect(try validate(online).status == 0)
        #expect(try world.rows("SELECT count(*) AS n FROM notes WHERE title = ?", device, [title])
            == [#"{"n":1}"#])
    }

    @Test("a server checksum that differs from the verified local one is a finding; nothing local changes")
    func serverChecksumMismatch() throws {
        try world.server.engine.inject(.corruptChecksum(scope: "catalog"))
        let before = try Data(contentsOf: URL(fileURLWithPath: device))
        let run = try validate(online + ["--json"])
        #expect(run.status == 1)
        let object = try Self.object(run)
        let findings = (object["findings"]?.arrayValue ?? []).compactMap(\.objectValue)
        #expect(findings.map { $0["rule"]?.stringValue } == ["server_checksum_mismatch"])
        #expect(findings.first?["scope"] == .string("catalog"))
        let servers = (object["scopes"]?.arrayValue ?? []).compactMap { $0.objectValue?["server"]?.stringValue }
        #expect(servers == ["mismatch", "matches"])
        #expect(try Data(contentsOf: URL(fileURLWithPath: device)) == before)
    }

    @Test("a store behind the server is reported, not a finding")
    func behindIsNotAFinding() throws {
        let other = world.database("other.db")
        try world.expectSuccess(world.sync(other, pageLimit: 100))
        try world.expectSuccess(world.sql(other, [
            "INSERT INTO notes (id, owner_id, title, pinned, updated_at) VALUES ('v-1', 'alice', 'later', 0, ?)",
            "2026-01-01T00:00:00.000Z",
        ]))
        try world.expectSuccess(world.sync(other, pageLimit: 100))
        let run = try validate(online)
        #expect(run.status == 0, "\(run.stdoutText)")
        #expect(run.lines.prefix(2) == [
            "scope catalog: 70 rows, digest verified, server: matches",
            "scope user:alice: 60 rows, digest verified, server: behind",
        ])
        try world.expectSuccess(world.run(
            ["sync", "--server", world.server.baseURL, "--db", device, "--token-env", "SEEDKIT_TEST_TOKEN",
             "--until-current"]))
        #expect(try validate(online).lines.prefix(2) == [
            "scope catalog: 70 rows, digest verified, server: matches",
            "scope user:alice: 61 rows, digest verified, server: matches",
        ])
    }

    @Test("usage errors and a missing file exit 2 without echoing a secret", arguments: [
        ["validate"],
        ["validate", "--db", "device.db", "--server", "http://127.0.0.1:1"],
        ["validate", "--db", "device.db", "--token-env", "SEEDKIT_TEST_TOKEN"],
        ["validate", "--db", "device.db", "--server", "127.0.0.1:1", "--token-env", "SEEDKIT_TEST_TOKEN"],
        ["validate", "--db", "device.db", "--server", "http://127.0.0.1:1", "--token-env", "SEEDKIT_UNSET_VARIABLE"],
        ["validate", "--db", "missing.db"],
        ["validate", "--db", "device.db", "secret-alice"],
    ])
    func usage(arguments: [String]) throws {
        let resolved = arguments.map { $0.hasSuffix(".db") ? world.database($0) : $0 }
        let run = try world.run(resolved)
        #expect(run.status == 2)
        #expect(!run.stderrText.contains("secret-alice"))
    }

    @Test("sync reads the credential from --token-env and refuses an unset variable without echoing")
    func tokenEnvironment() throws {
        let run = try world.run(
            ["sync", "--server", world.server.baseURL, "--db", device, "--token-env", "SEEDKIT_UNSET_VARIABLE"])
        #expect(run.status == 2)
        #expect(run.stderrText.contains("the environment variable SEEDKIT_UNSET_VARIABLE (--token-env) is unset or empty"))
    }

    // MARK: Helpers

    static func object(_ run: SeedkitProcess.Outcome) throws -> JSONObject {
        let line = try #require(run.lines.last)
        return try #require(try StrictJSONParser().parse(line).objectValue)
    }

    /// Edits the file the way a careless tool would: every occurrence of `text` gets its first byte changed
    /// (the row keeps its length, so SQLite's own checks still pass).
    static func tamper(_ path: String, replacing text: String) throws {
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let needle = Array(text.utf8)
        let replacement = needle[0] == UInt8(ascii: "X") ? UInt8(ascii: "Y") : UInt8(ascii: "X")
        var index = 0
        var replaced = 0
        while index + needle.count <= bytes.count {
            if bytes[index] == needle[0] && Array(bytes[index..<index + needle.count]) == needle {
                bytes[index] = replacement
                replaced += 1
                index += needle.count
            } else {
                index += 1
            }
        }
        try #require(replaced > 0)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }
}
