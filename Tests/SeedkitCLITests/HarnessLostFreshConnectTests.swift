import Foundation
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// Found by the crash harness (docs/reliability.md, "Findings", 2): when a fresh client's first connect is committed
/// on the server but its answer never reaches the store (a lost response, or the process killed after it arrived
/// and before it was installed), the identity is known to the server from then on, and like upstream's server the
/// reference server refuses its resent sentinel with 400 `invalid_schema_reference`. The engine leaves that
/// identity for a new one and connects fresh (docs/decisions.md, "A lost first-connect response: the store leaves
/// the identity it never held"); a job that always passes the same `--client-id` keeps working (docs/cli.md).
@Suite("Harness finding: a lost response to a fresh client's first connect", .serialized)
struct HarnessLostFreshConnectTests {
    static let fixedID = "ci-warm-1"

    @Test("a fresh device whose first connect response is lost completes its first sync under a new client ID")
    func lostFirstConnect() throws {
        let world = try HarnessSyncWorld()
        try world.server.engine.inject(.loseResponse(route: "/sync/connect", count: 1))
        // The same run retries the connect, is refused, leaves the identity and syncs under a new one.
        try world.expectSuccess(try sync(world), "the first sync")
        try expectConverged(world)
    }

    @Test("a device killed after its first connect answer arrived, before installing it, recovers on the next run")
    func killedBeforeInstallingFirstConnect() throws {
        let world = try HarnessSyncWorld()
        let killed = try sync(world, crashAt: "connect.received")
        try world.expect(killed.killed, "the first sync was not killed: \(killed.stderrText)")
        try world.expectSuccess(try sync(world), "the run after the kill")
        try expectConverged(world)
    }

    private func sync(_ world: HarnessSyncWorld, crashAt point: String? = nil) throws -> HarnessOutcome {
        try world.child(
            ["sync", "--server", world.server.baseURL, "--db", world.device, "--token-env", "SEEDKIT_TEST_TOKEN",
             "--page-limit", "20", "--client-id", Self.fixedID],
            crashAt: point)
    }

    /// The store left the fixed ID for exactly one new one, validates against the server, and the same command
    /// line — still naming the left ID — keeps syncing as a continuing client.
    private func expectConverged(_ world: HarnessSyncWorld) throws {
        let inspected = try world.child(["inspect", "--db", world.device, "--json"])
        try world.expectSuccess(inspected, "inspect")
        let state = try StrictJSONParser().parse(Array(inspected.stdout)).objectValue
        #expect(state?["replaced_client_ids"] == .array([.string(Self.fixedID)]))
        let current = state?["client_id"]?.stringValue
        #expect(current != nil && current != Self.fixedID)
        #expect(state?["blocking_error"] == .null)

        let compared = try world.child([
            "validate", "--db", world.device, "--server", world.server.baseURL, "--token-env", "SEEDKIT_TEST_TOKEN",
            "--json",
        ])
        try world.expectSuccess(compared, "validate --server after the first sync")
        #expect(!compared.stdoutText.contains(#""server":"mismatch""#), "\(compared.stdoutText)")

        try world.expectSuccess(try sync(world), "the next sync with the same --client-id")
        let again = try world.child(["inspect", "--db", world.device, "--json"])
        #expect(try StrictJSONParser().parse(Array(again.stdout)).objectValue?["client_id"]?.stringValue == current)
        try world.expectSuccess(try world.child(["validate", "--db", world.device]), "validate")
    }
}
