import Foundation
import Testing
import _SeedkitTestSupport

/// Found by the crash harness (docs/reliability.md, "Findings"): when the response to a fresh client's first
/// connect is lost, the server has already bound the identity (generation 1), so the engine's retry of the same
/// request — the fresh sentinel `{"version":0,"hash":""}` without a generation — is refused with 400
/// `invalid_schema_reference` (wire-protocol §2.5, client contract "Connect": a non-retryable connection error).
/// `seedkit sync` exits 1; its next run connects under a new client ID because the store was never bound, but an
/// embedding that keeps a fixed client ID can never connect again. The known issue fails this test once it is
/// fixed (for example by a retried fresh connect under a new identity, or a server that treats the exact replay
/// of a fresh connect as the same connect).
@Suite("Harness finding: a lost response to a fresh client's first connect", .serialized)
struct HarnessLostFreshConnectTests {
    @Test("a fresh device whose first connect response is lost completes its first sync")
    func lostFirstConnect() throws {
        let world = try HarnessSyncWorld()
        try world.server.engine.inject(.loseResponse(route: "/sync/connect", count: 1))
        let first = try world.sync(world.device, pageLimit: 20)
        withKnownIssue("the retry of a lost fresh connect presents the sentinel for a known identity") {
            try world.expectSuccess(first, "the first sync")
        }
        #expect(first.succeeded || HarnessSyncWorld.isRefusedFreshRetry(first), "\(first.stderrText)")

        // The store is left unbound and unharmed: the next run connects and syncs.
        try world.expectSuccess(try world.sync(world.device, pageLimit: 20), "the next sync")
        try world.expectSuccess(try world.child(["validate", "--db", world.device]), "validate")
    }
}
