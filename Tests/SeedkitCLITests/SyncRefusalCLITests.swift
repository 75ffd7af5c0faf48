import Foundation
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// A client the reference server retires (`POST /operator/faults` `retire_client`, docs/server.md): `seedkit sync`
/// stores the 409 `client_retired` refusal with its recovery action `none`, prints the code, what it means and that
/// no command recovers the store, and exits 3; `inspect --json` shows the stored error; the pending intent stays
/// queued and its sealed batch is never sent again, not even with `--retry-after-error` (issue #16, item 2).
@Suite("seedkit sync: a retired client is a stored refusal", .serialized)
struct SyncRefusalCLITests {
    @Test("after retirement the refusal is stored, shown by inspect, and no later sync sends anything")
    func retiredClient() throws {
        let world = try HarnessSyncWorld()
        try world.expectSuccess(try world.sync(world.device, pageLimit: 20), "the first sync")
        let clientID = try #require(try world.inspect().clientID)
        try world.expectSuccess(
            try world.sql(["INSERT INTO notes (id, owner_id, title, pinned, updated_at) VALUES "
                + "('hn-retired', 'alice', 'Kept', 0, '2026-01-02T03:04:05.000Z')"]), "a local write")
        try world.server.engine.inject(.retireClient(user: "alice", client: clientID))

        let refused = try world.sync(world.device, pageLimit: 20)
        #expect(!refused.signaled && refused.status == 3, "\(refused.status): \(refused.stderrText)")
        #expect(refused.stderrText.contains("client_retired: the server retired this client identity"))
        #expect(refused.stderrText.contains("recovery: none for this store"))
        let error = try #require(refused.lines.last.flatMap { try? StrictJSONParser().parse($0).objectValue })
        #expect(error["code"] == .string("client_retired") && error["retryable"] == .bool(false))
        #expect(error["blocked"]?.objectValue?["recovery_action"] == .string("none"))
        #expect(!refused.stderrText.contains("secret-alice"))

        let inspected = try world.child(["inspect", "--db", world.device, "--json"])
        try world.expectSuccess(inspected, "inspect")
        let blocking = try #require(
            try StrictJSONParser().parse(inspected.lines.last ?? "").objectValue?["blocking_error"]?.objectValue)
        #expect(blocking["code"] == .string("client_retired"))
        #expect(try world.inspect().pending == 1)

        // Nothing is sent again: a refused run starts no phase (the engine test counts the requests).
        for extra in [[], ["--retry-after-error"]] {
            let again = try world.child(
                ["sync", "--server", world.server.baseURL, "--db", world.device, "--token-env", "SEEDKIT_TEST_TOKEN",
                 "--json"] + extra)
            #expect(again.status == 3, "\(again.stderrText)")
            #expect(!again.stdoutText.contains("phase_started"), "\(again.stdoutText)")
        }
        #expect(try world.inspect().pending == 1)
    }
}
