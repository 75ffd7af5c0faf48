import SQLiteKit
import SynchroProtocol

/// `POST /sync/pull` (`spec/wire-protocol.md` §5): one bounded page of incremental changes across
/// the client's scopes, the assignment transition, and stale-cursor rebuild dispatch.
///
/// Validation (parse, binding, retirement, generation, schema, assignment version, scopes and
/// cursors) and the `capture_pending` fence run before anything is written. The assignment
/// transition, the page at its boundary and the terminal checksums are then built in one
/// transaction, so a failed pull writes nothing.
enum PullEndpoint {
    static func handle(
        _ body: JSONValue, context: EndpointContext, state: inout EngineState
    ) -> Result<EndpointReply, WireError> {
        do {
            return .success(try pull(body, context: context, state: &state))
        } catch {
            return .failure(WireError.from(error))
        }
    }

    private static func pull(_ body: JSONValue, context: EndpointContext, state: inout EngineState) throws
        -> EndpointReply
    {
        let request: PullRequest
        do {
            request = try PullRequest.parse(json: body)
        } catch {
            throw WireError.invalidRequest(error.description)
        }
        var client = try ClientGate.admit(
            clientID: request.clientID, generation: request.clientGeneration, schema: request.schema,
            context: context, state: state)
        guard request.scopeSetVersion <= client.scopeSetVersion else {
            throw WireError.invalidRequest("scope_set_version is ahead of the server")
        }
        let assigned = Assignment.scopes(for: context.user, state: state)
        let stream = try StreamState.load(from: state.store)
        let presented = try PresentedScopes.validate(
            request.scopes, client: client, assigned: assigned, schemaHash: state.manifest.schemaHash,
            stream: stream, signer: state.cursorSigner)
        try ClientGate.requireMaterialized(client, stream: stream, captureBlocked: state.captureBlocked)

        let db = state.store.db
        return try db.transaction {
            let delta = AssignmentDelta(
                recorded: client.assigned, current: assigned, presented: presented.entries.map(\.scope),
                clientBehind: request.scopeSetVersion < client.scopeSetVersion)
            if delta.changed {
                client.scopeSetVersion += 1
                client.assigned = assigned
            }
            // Presenting a current cursor is the client's activity (`spec/wire-protocol.md` §9).
            if presented.acknowledgesPosition { client.lastActivity = context.now }
            if delta.changed || presented.acknowledgesPosition { try client.save(to: db) }

            let plan = PullPlan(presented: presented, delta: delta, assigned: assigned)
            let page = try PullPage.select(
                scopes: plan.resumable, boundary: stream.position, limit: Int(request.limit), store: state.store)
            return EndpointReply(body: try PullResponse.write(
                plan: plan, page: page, client: client, stream: stream, state: &state))
        }
    }
}

/// Which scope gets what in one pull response.
struct PullPlan {
    /// Current scopes with a resumable cursor, in request order.
    let resumable: [(scope: String, position: Int64)]
    /// Scopes to rebuild, byte order: added scopes and current scopes presented without a usable cursor.
    let rebuild: [String]
    let delta: AssignmentDelta
    /// The active assigned set after this response: the keys of a terminal checksum map.
    let assigned: [String]

    init(presented: PresentedScopes, delta: AssignmentDelta, assigned: [String]) {
        var resumable: [(scope: String, position: Int64)] = []
        var rebuild = delta.added
        for entry in presented.entries where ClientGate.contains(assigned, entry.scope) {
            switch entry.standing {
            case .valid(let position) where !ClientGate.contains(delta.added, entry.scope):
                resumable.append((entry.scope, position))
            case .valid, .none, .stale:
                if !ClientGate.contains(rebuild, entry.scope) { rebuild.append(entry.scope) }
            }
        }
        self.resumable = resumable
        self.rebuild = rebuild.byteOrdered()
        self.delta = delta
        self.assigned = assigned
    }
}
