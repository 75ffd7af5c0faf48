import Foundation
import Testing
import _SeedkitTestSupport

/// Found by the crash harness (docs/reliability.md, "Findings", 2): when the response to a fresh client's first
/// connect is lost, the server has already registered the identity, and the engine retries the same request — the
/// fresh sentinel `{"version":0,"hash":""}` without a generation. The server used to refuse it with 400
/// `invalid_schema_reference`, locking a fixed client ID out; an identity the server has never seen with a
/// generation or installed schema (wire-protocol §2.5) now gets its retried first connect answered as a first
/// connect (docs/decisions.md, "A retried first connect is a first connect").
@Suite("Harness finding: a lost response to a fresh client's first connect", .serialized)
struct HarnessLostFreshConnectTests {
    @Test("a fresh device whose first connect response is lost completes its first sync")
    func lostFirstConnect() throws {
        let world = try HarnessSyncWorld()
        try world.server.engine.inject(.loseResponse(route: "/sync/connect", count: 1))
        // The engine retries the connect whose answer was lost; the same run binds the store and syncs.
        try world.expectSuccess(try world.sync(world.device, pageLimit: 20), "the first sync")
        // Converged: every scope's verified checksum equals the server's.
        let compared = try world.child([
            "validate", "--db", world.device, "--server", world.server.baseURL, "--token-env", "SEEDKIT_TEST_TOKEN",
            "--json",
        ])
        try world.expectSuccess(compared, "validate --server after the first sync")
        #expect(!compared.stdoutText.contains(#""server":"mismatch""#), "\(compared.stdoutText)")

        // The client ID is bound and keeps working: the next run connects as a continuing client.
        try world.expectSuccess(try world.sync(world.device, pageLimit: 20), "the next sync")
        try world.expectSuccess(try world.child(["validate", "--db", world.device]), "validate")
    }
}
