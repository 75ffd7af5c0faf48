import SQLiteKit
import SynchroProtocol

/// `POST /sync/rebuild` (`spec/wire-protocol.md` §6): one page of an immutable staged snapshot of
/// exactly one assigned scope.
///
/// Order (§6.3, §8.4): parse, binding, retirement, generation, schema, scope assignment, then the
/// session or continuation (400 when not ours or misbound, 409 `rebuild_restart_required` when
/// authentic but stale), then the accepted-write fence (503), and only then a replayed page,
/// a new page from the stage, or a new session.
enum RebuildEndpoint {
    static func handle(
        _ body: JSONValue, context: EndpointContext, state: inout EngineState
    ) -> Result<EndpointReply, WireError> {
        do {
            return .success(try rebuild(body, context: context, state: &state))
        } catch {
            return .failure(WireError.from(error))
        }
    }

    /// Where a request resumes.
    private enum Resumption {
        /// No session exists for this `rebuild_id`: stage one.
        case newSession
        /// An existing, current session; `ordinal` is the first record of the requested page.
        case page(RebuildSession, ordinal: Int64)
    }

    private static func rebuild(_ body: JSONValue, context: EndpointContext, state: inout EngineState) throws
        -> EndpointReply
    {
        let request: RebuildRequest
        do {
            request = try RebuildRequest.parse(json: body)
        } catch {
            throw WireError.invalidRequest(error.description)
        }
        let client = try ClientGate.admit(
            clientID: request.clientID, generation: request.clientGeneration, schema: request.schema,
            context: context, state: state)
        // Assigned as reported to the client and still by the assignment rule: rebuild never
        // reconciles assignment, and never serves a scope the rule has since withdrawn.
        guard ClientGate.contains(client.assigned, request.scope),
              ClientGate.contains(Assignment.scopes(for: context.user, state: state), request.scope)
        else { throw WireError.invalidRequest("scope is not assigned") }
        let stream = try StreamState.load(from: state.store)
        let resumption = try resume(request, client: client, stream: stream, now: context.now, state: state)
        try ClientGate.requireMaterialized(client, stream: stream, captureBlocked: state.captureBlocked)

        let db = state.store.db
        return try db.transaction {
            switch resumption {
            case .newSession:
                let session = try RebuildSession.stage(
                    request: request, client: client, stream: stream, now: context.now, state: &state)
                return EndpointReply(body: try RebuildPage.body(session: session, ordinal: 0, state: state))
            case .page(let session, let ordinal):
                return EndpointReply(body: try RebuildPage.body(session: session, ordinal: ordinal, state: state))
            }
        }
    }

    /// Validates the null cursor's session or the continuation (§6.3, §8.4 step 7).
    private static func resume(
        _ request: RebuildRequest, client: ClientRecord, stream: StreamState, now: Int64, state: EngineState
    ) throws -> Resumption {
        let current = state.manifest.schemaHash
        guard let token = request.cursor else {
            guard let session = try RebuildSession.find(
                user: client.userID, client: client.clientID, rebuildID: request.rebuildID, store: state.store)
            else { return .newSession }
            // A `rebuild_id` names one attempt: another scope or limit under it is a misbound request.
            guard session.scope.exactlyEquals(request.scope), session.limit == request.limit else {
                throw WireError.invalidRequest("rebuild_id is bound to another scope or limit")
            }
            if session.isStale(client: client, schemaHash: current, generations: stream.generations, at: now) {
                throw restartRequired(request.scope)
            }
            return .page(session, ordinal: 0)
        }
        guard let payload = try? state.continuationSigner.verify(token),
              let continuation = RebuildContinuation(payload: payload),
              continuation.user.exactlyEquals(client.userID), continuation.client.exactlyEquals(client.clientID),
              continuation.scope.exactlyEquals(request.scope), continuation.rebuildID.exactlyEquals(request.rebuildID)
        else { throw WireError.invalidRequest("invalid continuation") }
        guard continuation.limit == request.limit else {
            throw WireError.invalidRequest("limit differs from the session's")
        }
        if now >= continuation.expiry || continuation.generation != client.generation
            || !continuation.schemaHash.exactlyEquals(current) || continuation.epoch != client.acceptedWriteEpoch
            || continuation.generations != stream.generations
        {
            throw restartRequired(request.scope)
        }
        guard let session = try RebuildSession.find(id: continuation.sessionID, store: state.store),
              session.rebuildID.exactlyEquals(continuation.rebuildID),
              session.userID.exactlyEquals(client.userID), session.clientID.exactlyEquals(client.clientID),
              session.boundary == continuation.boundary, continuation.ordinal > 0,
              continuation.ordinal < session.rowCount
        else { throw restartRequired(request.scope) }
        if session.isStale(client: client, schemaHash: current, generations: stream.generations, at: now) {
            throw restartRequired(request.scope)
        }
        return .page(session, ordinal: continuation.ordinal)
    }

    private static func restartRequired(_ scope: String) -> WireError {
        WireError(.rebuildRestartRequired, "rebuild must restart", extras: [JSONMember("scope_id", .string(scope))])
    }
}
