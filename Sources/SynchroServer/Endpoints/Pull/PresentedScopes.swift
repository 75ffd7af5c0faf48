import SynchroProtocol

/// The pull `scopes` map after validation (`spec/wire-protocol.md` §5.1, §5.5, §5.7): every scope
/// known to this client, every non-null cursor authentic and bound to this user, client and scope.
struct PresentedScopes {
    /// What a presented cursor allows.
    enum Standing {
        /// `null`: no usable state; the scope needs a rebuild.
        case none
        /// Authentic but bound to an obsolete generation, schema or lineage, or outside the stream.
        case stale
        /// Resumable after this stream position.
        case valid(position: Int64)
    }

    struct Entry {
        let scope: String
        let standing: Standing
    }

    let entries: [Entry]

    /// Validates the map. Any malformed, forged, misbound or wrong-kind cursor, or a scope this
    /// client was never assigned, fails the whole request with 400 and no detail about which.
    ///
    /// "Ever assigned" is the recorded assignment, the current assignment, or — for a scope since
    /// removed whose removal the client has not applied — an authentic cursor issued to this client
    /// for that scope, which proves the earlier assignment without keeping assignment history.
    static func validate(
        _ map: ScopeCursorMap, client: ClientRecord, assigned: [String], schemaHash: String, stream: StreamState,
        signer: TokenSigner
    ) throws -> PresentedScopes {
        var entries: [Entry] = []
        entries.reserveCapacity(map.entries.count)
        for entry in map.entries {
            var standing = Standing.none
            if let token = entry.cursor {
                let cursor = try authenticCursor(token, client: client, scope: entry.scopeID, signer: signer)
                standing = isCurrent(cursor, client: client, schemaHash: schemaHash, stream: stream)
                    ? .valid(position: cursor.position) : .stale
            } else if !ClientGate.contains(client.assigned, entry.scopeID),
                      !ClientGate.contains(assigned, entry.scopeID) {
                throw WireError.invalidRequest("unknown scope")
            }
            entries.append(Entry(scope: entry.scopeID, standing: standing))
        }
        return PresentedScopes(entries: entries)
    }

    /// True when some presented cursor is current: the request acknowledges a position.
    var acknowledgesPosition: Bool {
        entries.contains { if case .valid = $0.standing { true } else { false } }
    }

    private static func authenticCursor(
        _ token: String, client: ClientRecord, scope: String, signer: TokenSigner
    ) throws -> PullCursor {
        guard let payload = try? signer.verify(token), let cursor = PullCursor(payload: payload),
              cursor.user.exactlyEquals(client.userID), cursor.client.exactlyEquals(client.clientID),
              cursor.scope.exactlyEquals(scope)
        else { throw WireError.invalidRequest("invalid cursor") }
        return cursor
    }

    /// Bound to the current generation, schema and lineage, and at a position the stream has.
    private static func isCurrent(
        _ cursor: PullCursor, client: ClientRecord, schemaHash: String, stream: StreamState
    ) -> Bool {
        cursor.generation == client.generation && cursor.schemaHash.exactlyEquals(schemaHash)
            && cursor.streamGeneration == stream.generations.stream
            && cursor.membershipGeneration == stream.generations.membership
            && cursor.retentionGeneration == stream.generations.retention
            && cursor.position >= 0 && cursor.position <= stream.position
    }
}
