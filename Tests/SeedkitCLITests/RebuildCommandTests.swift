import Foundation
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// `seedkit rebuild` as a user runs it: an explicit new rebuild attempt through the engine's durable path.
@Suite("seedkit rebuild", .serialized)
struct RebuildCommandTests {
    let world: DeviceWorld
    let device: String

    init() throws {
        world = try DeviceWorld(rows: 30)
        device = world.database("device.db")
        try world.expectSuccess(world.sync(device, pageLimit: 25))
    }

    func rebuild(_ extra: [String]) throws -> SeedkitProcess.Outcome {
        try world.run(
            ["rebuild", "--db", device, "--server", world.server.baseURL, "--token-env", "SEEDKIT_TEST_TOKEN",
             "--page-limit", "25", "--json"] + extra)
    }

    /// Each scope's generation, from `seedkit inspect --json`.
    func generations() throws -> [String: Int64] {
        let run = try world.run(["inspect", "--db", device, "--json"])
        try world.expectSuccess(run)
        let object = try ValidateCommandTests.object(run)
        var result: [String: Int64] = [:]
        for scope in (object["scopes"]?.arrayValue ?? []).compactMap(\.objectValue) {
            result[scope["scope_id"]?.stringValue ?? ""] = scope["generation"]?.numberValue?.exactInt64
        }
        return result
    }

    @Test("one named scope is rebuilt in one request per page; the other scope keeps its state")
    func namedScope() throws {
        let before = try generations()
        let run = try rebuild(["--scope", "catalog"])
        try world.expectSuccess(run)
        let summary = try ValidateCommandTests.object(run)
        // 70 catalog rows at 25 per page: three pages, one request each, then the steady pull.
        #expect(try CanonicalJSON.string(summary["requests"] ?? .null)
            == #"{"connect":1,"pull":1,"push":0,"rebuild":3}"#)
        #expect(summary["rows_applied"] == .number(JSONNumber(70)))
        #expect(summary["scopes_rebuilt"] == .array([.string("catalog")]))
        let after = try generations()
        #expect(after["catalog"] ?? 0 > before["catalog"] ?? 0)
        #expect(after["user:alice"] == before["user:alice"])
        try world.expectValid(device)
    }

    @Test("without --scope every assigned scope is rebuilt, and the store validates against the server")
    func everyScope() throws {
        let run = try rebuild([])
        try world.expectSuccess(run)
        let summary = try ValidateCommandTests.object(run)
        #expect(summary["scopes_rebuilt"] == .array([.string("catalog"), .string("user:alice")]))
        let validate = try world.run(
            ["validate", "--db", device, "--server", world.server.baseURL, "--token-env", "SEEDKIT_TEST_TOKEN"])
        #expect(validate.status == 0, "\(validate.stdoutText)")
    }

    @Test("a scope the store does not have fails with exit 1 and changes nothing")
    func unknownScope() throws {
        let before = try world.run(["inspect", "--db", device, "--json"]).stdoutText
        let run = try rebuild(["--scope", "catalog", "--scope", "user:bob"])
        #expect(run.status == 1)
        #expect(run.stderrText.contains("rebuild: scope user:bob is not assigned to this store"))
        #expect(try world.run(["inspect", "--db", device, "--json"]).stdoutText == before)
    }

    @Test("a missing store and a wrong invocation exit 2", arguments: [
        ["rebuild", "--db", "missing.db", "--server", "http://127.0.0.1:1", "--token-env", "SEEDKIT_TEST_TOKEN"],
        ["rebuild", "--db", "device.db", "--token-env", "SEEDKIT_TEST_TOKEN"],
        ["rebuild", "--db", "device.db", "--server", "http://127.0.0.1:1"],
        ["rebuild", "--db", "device.db", "--server", "http://127.0.0.1:1", "--token-env", "SEEDKIT_TEST_TOKEN",
         "--scope", ""],
    ])
    func usage(arguments: [String]) throws {
        let run = try world.run(arguments.map { $0.hasSuffix(".db") ? world.database($0) : $0 })
        #expect(run.status == 2)
    }
}
