import SQLiteKit
import SynchroProtocol

/// The gates pull and rebuild share, in the dispatch order of `spec/wire-protocol.md` §8.4:
/// client binding (401), retirement (409), current generation (409), current schema (422), and —
/// after token validation — the accepted-write fence (503).
enum ClientGate {
    /// The client record of an admitted request.
    ///
    /// A `client_id` never registered by connect for this user is treated like one bound to another
    /// user (401): pull and rebuild have no registration path, and telling the two apart would let
    /// a caller probe other users' client IDs.
    static func admit(
        clientID: String, generation: Int64, schema: SchemaReference, context: EndpointContext, state: EngineState
    ) throws -> ClientRecord {
        let db = state.store.db
        if let owner = try ClientRecord.boundUser(of: clientID, in: db), !owner.exactlyEquals(context.user) {
            throw WireError(.authRequired, "authentication required")
        }
        guard let client = try ClientRecord.load(user: context.user, client: clientID, from: db) else {
            throw WireError(.authRequired, "authentication required")
        }
        if client.retired { throw WireError(.clientRetired, "client retired") }
        if client.generationExpired || generation != client.generation {
            throw WireError.generationExpired(current: client.generation)
        }
        let current = state.manifest.reference
        guard schema.version == current.version, schema.hash.exactlyEquals(current.hash) else {
            throw WireError.schemaMismatch(current: current, received: schema)
        }
        return client
    }

    /// 503 while an accepted write of this client is not yet materialized (`spec/integrity.md` §6.1):
    /// `capture_pending`, or `temporary_unavailable` with reason `capture_blocked` when the
    /// materializer is stuck and waiting would not help by itself.
    static func requireMaterialized(_ client: ClientRecord, stream: StreamState, captureBlocked: Bool) throws {
        guard stream.isPending(fenceLSN: client.pendingFenceLSN) else { return }
        if captureBlocked {
            throw WireError(.temporaryUnavailable, "capture is blocked", extras: [
                JSONMember("reason", .string("capture_blocked")),
            ])
        }
        throw WireError(.capturePending, "an accepted write is not yet visible")
    }

    /// Whether `scopes` (byte-ordered or not) holds exactly `scope`.
    static func contains(_ scopes: [String], _ scope: String) -> Bool {
        scopes.contains { $0.exactlyEquals(scope) }
    }
}
