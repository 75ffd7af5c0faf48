import SQLiteKit
import SynchroProtocol

/// Turns a seed continuation receipt presented on connect into a normal incremental cursor at the
/// export boundary, bound to the user and client — the only non-null cursor a `scopes.add` entry
/// ever carries (`spec/integrity.md` §7.5, `spec/wire-protocol.md` §3.6).
///
/// The caller handles assignment first: a receipt for a scope the client is not assigned is
/// answered with `scopes.remove` and never reaches this check. Every failure here — forged or
/// malformed token, another scope, another key ID, a stale lineage, an
/// incompatible schema, a boundary the stream cannot resume from — gives the same answer, no
/// cursor: the client rebuilds the scope. The client sees no reason (integrity §9 point 6).
enum SeedReceiptValidation {
    /// The connect a receipt arrives with.
    struct Connect {
        /// The client after this connect's generation renewal: the cursor binds its new generation.
        let client: ClientRecord
        /// The schema the client says it has installed (nil: the fresh sentinel).
        let presentedSchema: SchemaReference?
        let dispatch: SchemaDispatch
    }

    /// The cursor for the assigned `scope` when `receipt` is valid under the current server state;
    /// nil otherwise.
    static func cursor(receipt: String, scope: String, connect: Connect, state: EngineState) throws -> String? {
        let stream = try StreamState.load(from: state.store)
        guard let claims = authenticReceipt(receipt, scope: scope, state: state),
              ClientGate.contains(state.dataset.portableScopes, scope),
              schemaContinues(claims, scope: scope, connect: connect, current: state.manifest),
              let position = try resumablePosition(claims, stream: stream, store: state.store)
        else { return nil }
        return state.cursorSigner.issue(PullCursor(
            user: connect.client.userID, client: connect.client.clientID, generation: connect.client.generation,
            scope: scope, schemaHash: state.manifest.schemaHash, generations: stream.generations, position: position
        ).payload)
    }

    /// The receipt's claims when it is authentic (MAC in constant time, under this server's continuation key),
    /// has the exact receipt payload (kind, version, members), names `scope` and carries this server's key ID.
    ///
    /// The receipt alone is the evidence, as upstream validates it: an export made through the SQL functions runs
    /// in a READ ONLY transaction and leaves no `seed_exports` row, and only this server's key can have signed
    /// the payload, so its schema hash, lineage and boundary are what an export of this server saw.
    private static func authenticReceipt(_ receipt: String, scope: String, state: EngineState)
        -> SeedContinuationPayload?
    {
        guard let payload = try? state.seedReceiptSigner.verify(receipt),
              let decoded = try? SeedContinuationPayload(payload: payload), decoded.scopeID.exactlyEquals(scope),
              decoded.keyID.exactlyEquals(state.seedKeyIDs.receipt)
        else { return nil }
        return decoded
    }

    /// Whether the seed's rows, digested under the receipt's schema, continue under the schema this
    /// connect selects.
    ///
    /// The receipt must describe what the client has installed (the seed's own schema), the
    /// dispatch must leave the client on a usable schema without rebuilding this scope, and the
    /// export's schema must lead to the current one compatibly.
    private static func schemaContinues(
        _ claims: SeedContinuationPayload, scope: String, connect: Connect, current: SchemaManifest
    ) -> Bool {
        guard let presented = connect.presentedSchema, presented.hash.exactlyEquals(claims.schemaHash),
              compatibleLineage(fromHash: claims.schemaHash, to: current),
              presented.version == current.schemaVersion
        else { return false }
        let dispatch = connect.dispatch
        return dispatch.action != "unsupported" && !dispatch.resetAll && !ClientGate.contains(dispatch.affected, scope)
    }

    /// True when rows exported under `fromHash` stay valid under `current` at the same position.
    ///
    /// Today: the same manifest. A lineage of Class 2 transitions only (wire §12.5) also qualifies
    /// once schema publication exists; it belongs here, and the cursor is then issued under the
    /// current hash exactly as a `scope_cursor_updates` replacement is (wire §3.4).
    private static func compatibleLineage(fromHash: String, to current: SchemaManifest) -> Bool {
        fromHash.exactlyEquals(current.schemaHash)
    }

    /// The receipt boundary's stream position when every lineage counter the receipt binds is
    /// still current and the stream can resume there.
    ///
    /// The reference server keeps its whole stream (no compaction, resume floor 0), so any
    /// position of the current stream generation up to the materialized head is resumable.
    private static func resumablePosition(_ claims: SeedContinuationPayload, stream: StreamState, store: ServerStore)
        throws -> Int64?
    {
        let current = stream.generations
        guard claims.streamGeneration == UInt64(clamping: current.stream),
              claims.membershipGeneration == UInt64(clamping: current.membership),
              claims.retentionGeneration == UInt64(clamping: current.retention),
              claims.registryGeneration == UInt64(clamping: try store.metaInteger("registry_generation")),
              let position = claims.snapshotBoundary.streamPosition,
              position >= 0, position <= stream.position
        else { return nil }
        return position
    }
}
