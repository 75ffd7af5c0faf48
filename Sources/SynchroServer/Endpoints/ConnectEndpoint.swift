import SQLiteKit
import SynchroProtocol

/// `POST /sync/connect`: register or resume a client, renew its generation, choose exactly one
/// schema action and reconcile its scope assignment (`spec/wire-protocol.md` §3).
enum ConnectEndpoint {
    static func handle(
        _ body: JSONValue, context: EndpointContext, state: inout EngineState
    ) -> Result<EndpointReply, WireError> {
        do {
            return .success(try connect(body, context: context, state: &state))
        } catch let error as WireError {
            return .failure(error)
        } catch {
            return .failure(WireError(.temporaryUnavailable, "operation failed"))
        }
    }

    private static func connect(_ body: JSONValue, context: EndpointContext, state: inout EngineState) throws
        -> EndpointReply
    {
        let request = try parse(body, context: context)
        let db = state.store.db
        if let owner = try ClientRecord.boundUser(of: request.clientID, in: db), !owner.exactlyEquals(context.user) {
            throw WireError(.authRequired, "authentication required")
        }
        let existing = try ClientRecord.load(user: context.user, client: request.clientID, from: db)
        if existing?.retired == true { throw WireError(.clientRetired, "client retired") }
        try checkSchemaReferenceUse(request, existing: existing, received: body)

        return try db.transaction {
            var client = existing ?? ClientRecord(
                userID: context.user, clientID: request.clientID, generation: 0, schemaVersion: 0,
                scopeSetVersion: 0, assigned: [], retired: false, acceptedWriteEpoch: 0, pendingFenceLSN: 0,
                lastActivity: context.now)
            let renewed = client.generation == 0 || request.clientGeneration != client.generation
            if renewed { client.generation += 1 }
            client.lastActivity = context.now

            let current = state.manifest
            let assignedNow = Assignment.scopes(for: context.user, state: state)
            let dispatch = try SchemaDispatch.decide(
                request: request, client: client, assigned: assignedNow, current: current, store: state.store)

            // Assignment delta against what the server recorded for this client.
            let previous = Set(client.assigned)
            let now = Set(assignedNow)
            var added = assignedNow.filter { !previous.contains($0) }
            var removed = client.assigned.filter { !now.contains($0) }
            for entry in request.knownScopes.entries where !now.contains(entry.scopeID) && !removed.contains(entry.scopeID) {
                removed.append(entry.scopeID)
            }
            if previous != now { client.scopeSetVersion += 1 }
            client.assigned = assignedNow

            // Seed receipts (§3.6, integrity §7.5): a receipt never grants assignment, so an
            // unassigned scope comes back in `remove`; an assigned one in `add`, with a cursor at
            // the seed boundary when its receipt is valid now and `null` (rebuild) otherwise.
            var seedCursors: [ExactKey: String] = [:]
            let seedConnect = SeedReceiptValidation.Connect(
                client: client, presentedSchema: request.schema, dispatch: dispatch)
            for (scope, receipt) in request.seedReceipts ?? [] {
                guard ClientGate.contains(assignedNow, scope) else {
                    if !ClientGate.contains(removed, scope) { removed.append(scope) }
                    continue
                }
                if !ClientGate.contains(added, scope) { added.append(scope) }
                seedCursors[ExactKey(scope)] = try SeedReceiptValidation.cursor(
                    receipt: receipt, scope: scope, connect: seedConnect, state: state)
            }

            let updates = try cursorUpdates(
                request: request, client: client, dispatch: dispatch, renewed: renewed && existing != nil,
                kept: Set(assignedNow).subtracting(added), state: &state)
            if dispatch.action != "unsupported" { client.schemaVersion = current.schemaVersion }
            try ClientRecord.bind(client: request.clientID, to: context.user, in: db)
            try client.save(to: db)

            return EndpointReply(json: try response(
                context: context, client: client, current: current, dispatch: dispatch,
                added: added.byteOrdered(), seedCursors: seedCursors, removed: removed.byteOrdered(),
                updates: updates, state: &state))
        }
    }

    /// Gates of dispatch rows 1–2 (§3.3) and the structural rules (§3.1).
    private static func parse(_ body: JSONValue, context: EndpointContext) throws -> ConnectRequest {
        let request: ConnectRequest
        do {
            request = try ConnectRequest.parse(json: body)
        } catch {
            switch error {
            case .unsupportedProtocol(let received):
                throw WireError(.upgradeRequired, "protocol version 3 required", extras: [
                    JSONMember("required_protocol_version", .number(JSONNumber(3))),
                    JSONMember("received_protocol_version", received),
                ])
            case .invalidSchemaReference(let received):
                throw WireError(.invalidSchemaReference, "invalid schema reference", extras: [
                    JSONMember("received_schema", received),
                ])
            case .invalid(let violation):
                throw WireError.invalidRequest(violation.description)
            }
        }
        if let minimum = context.configuration.minimumClientVersion, let version = SemanticVersion(request.appVersion),
           version < minimum {
            throw WireError(.upgradeRequired, "client version below the minimum", extras: [
                JSONMember("minimum_client_version", .string(minimum.text)),
                JSONMember("received_client_version", .string(request.appVersion)),
            ])
        }
        return request
    }

    /// Row 2 of §3.3, as upstream's `synchro_connect` applies it (`docs/upstream/postgresql-extension.md` §5
    /// points 8–9): an identity is known from the moment its first connect is committed, so any stored client
    /// record refuses the fresh sentinel and a connect without `client_generation` — even when the answer to that
    /// first connect never reached the client (`docs/decisions.md`, "A lost first-connect response: the store
    /// leaves the identity it never held").
    private static func checkSchemaReferenceUse(
        _ request: ConnectRequest, existing: ClientRecord?, received body: JSONValue
    ) throws {
        let received = body.objectValue?["schema"] ?? .null
        func reject() -> WireError {
            WireError(.invalidSchemaReference, "invalid schema reference", extras: [JSONMember("received_schema", received)])
        }
        if request.schema == nil && (request.clientGeneration != nil || request.schemaReset || existing != nil) {
            throw reject()
        }
        if existing != nil && request.clientGeneration == nil { throw reject() }
        if request.schemaReset && (existing == nil || request.clientGeneration != existing?.generation) {
            throw reject()
        }
    }

    /// `scope_cursor_updates` (§3.4): for a Class 2/3 action, each kept scope whose presented cursor
    /// is bound to the historical schema gets a same-position replacement or null; after a generation
    /// renewal or an explicit reset every kept scope with a presented cursor gets null (§13 point 8).
    private static func cursorUpdates(
        request: ConnectRequest, client: ClientRecord, dispatch: SchemaDispatch, renewed: Bool, kept: Set<String>,
        state: inout EngineState
    ) throws -> [(String, String?)] {
        var updates: [(String, String?)] = []
        let changesSchema = dispatch.action == "replace" || dispatch.action == "rebuild_local"
        let stream = try StreamState.load(from: state.store)
        for entry in request.knownScopes.entries where kept.contains(entry.scopeID) {
            guard let token = entry.cursor else { continue }
            if renewed || dispatch.resetAll {
                updates.append((entry.scopeID, nil))
                continue
            }
            guard changesSchema, let presented = request.schema else { continue }
            guard !ClientGate.contains(dispatch.affected, entry.scopeID),
                  var cursor = replaceable(
                      token, scope: entry.scopeID, client: client, historical: presented, stream: stream,
                      signer: state.cursorSigner)
            else {
                updates.append((entry.scopeID, nil))
                continue
            }
            cursor.schemaHash = state.manifest.schemaHash
            updates.append((entry.scopeID, state.cursorSigner.issue(cursor.payload)))
        }
        return updates.sorted { $0.0.utf8Precedes($1.0) }
    }

    /// The presented cursor when it may continue at the same position under the current schema:
    /// authentic, issued to this user, client and scope under the presented historical schema and
    /// the current generation, and still inside the current stream lineage (§3.4: "every other
    /// binding … is still current"). Nil otherwise, which the response reports as `null`.
    private static func replaceable(
        _ token: String, scope: String, client: ClientRecord, historical: SchemaReference, stream: StreamState,
        signer: TokenSigner
    ) -> PullCursor? {
        guard let payload = try? signer.verify(token), let cursor = PullCursor(payload: payload),
              cursor.user.exactlyEquals(client.userID), cursor.client.exactlyEquals(client.clientID),
              cursor.scope.exactlyEquals(scope), cursor.generation == client.generation,
              cursor.schemaHash.exactlyEquals(historical.hash),
              cursor.streamGeneration == stream.generations.stream,
              cursor.membershipGeneration == stream.generations.membership,
              cursor.retentionGeneration == stream.generations.retention,
              cursor.position >= 0, cursor.position <= stream.position
        else { return nil }
        return cursor
    }

    private static func response(
        context: EndpointContext, client: ClientRecord, current: SchemaManifest, dispatch: SchemaDispatch,
        added: [String], seedCursors: [ExactKey: String], removed: [String], updates: [(String, String?)],
        state: inout EngineState
    ) throws -> JSONValue {
        var schema = [
            JSONMember("version", .number(JSONNumber(current.schemaVersion))),
            JSONMember("hash", .string(current.schemaHash)),
            JSONMember("action", .string(dispatch.action)),
        ]
        if let reason = dispatch.reason { schema.append(JSONMember("reason", .string(reason))) }
        var members = [
            JSONMember("server_time", .string(context.serverTime)),
            JSONMember("protocol_version", .number(JSONNumber(3))),
            JSONMember("client_generation", .number(JSONNumber(client.generation))),
            JSONMember("scope_set_version", .number(JSONNumber(client.scopeSetVersion))),
            JSONMember("schema", .object(JSONObject(schema))),
            JSONMember("scopes", .object(JSONObject([
                // Only a converted seed receipt gives an added scope a cursor (§3.5).
                JSONMember("add", .array(added.map { scope in
                    .object(JSONObject([
                        JSONMember("id", .string(scope)),
                        JSONMember("cursor", seedCursors[ExactKey(scope)].map(JSONValue.string) ?? .null),
                    ]))
                })),
                JSONMember("remove", .array(removed.map(JSONValue.string))),
            ]))),
            JSONMember("scope_cursor_updates", .object(JSONObject(updates.map {
                JSONMember($0.0, $0.1.map(JSONValue.string) ?? .null)
            }))),
        ]
        if dispatch.action == "replace" || dispatch.action == "rebuild_local" {
            let bytes = try state.store.db.cachedStatement("SELECT manifest FROM manifests WHERE version = ?")
                .scalar([.integer(current.schemaVersion)])?.blobValue ?? []
            members.append(JSONMember("schema_definition", try StrictJSONParser().parse(bytes)))
        }
        if dispatch.action == "rebuild_local" {
            members.append(JSONMember("affected_scopes", .array(dispatch.affected.byteOrdered().map(JSONValue.string))))
        }
        return .object(JSONObject(members))
    }
}

/// Which scopes a user is assigned: the dataset's shared scopes and the user's own scope, with the
/// grants and revocations an operator (or a test) made.
enum Assignment {
    static func scopes(for user: String, state: borrowing EngineState) -> [String] {
        var scopes = Set(state.dataset.assignedScopes(forUser: user))
        if let override = state.assignmentOverrides[user] {
            scopes.formUnion(override.granted)
            scopes.subtract(override.revoked)
        }
        return Array(scopes).byteOrdered()
    }
}

/// An operator's changes to one user's assignment.
struct AssignmentOverride {
    var granted: Set<String> = []
    var revoked: Set<String> = []
}

/// The schema action of one connect (§3.3 rows 3–10).
///
/// The path from the presented manifest to the current one follows the stored parent links
/// (``SchemaLineage``); each step's class was checked when it was published. Class 3 steps
/// contribute their affected entries (scope IDs or per-user patterns, ``AffectedScopes``),
/// intersected with the client's assignment after this connect's delta.
struct SchemaDispatch {
    var action: String
    var reason: String?
    /// Scopes to rebuild for `rebuild_local`, byte order.
    var affected: [String] = []
    /// A valid explicit reset: every kept cursor becomes null.
    var resetAll = false

    static func decide(
        request: ConnectRequest, client: ClientRecord, assigned: [String], current: SchemaManifest, store: ServerStore
    ) throws -> SchemaDispatch {
        // Row 3: the fresh sentinel (row 2 already refused every misuse of it).
        guard let presented = request.schema else { return SchemaDispatch(action: "replace") }
        // Rows 9 and 10. The reset gates (current generation, protocol, runtime) ran before; the
        // presented reference only has to be well formed: a reset is the one way out of
        // `unsupported`, including `unknown_schema_lineage`, so it cannot require a known lineage.
        if request.schemaReset {
            return assigned.isEmpty
                ? SchemaDispatch(action: "replace", resetAll: true)
                : SchemaDispatch(action: "rebuild_local", affected: assigned.byteOrdered(), resetAll: true)
        }
        // Row 4.
        if presented == current.reference { return SchemaDispatch(action: "none") }
        // Row 8, unknown lineage.
        guard let steps = try SchemaLineage.steps(from: presented, to: current.reference, store: store) else {
            return SchemaDispatch(action: "unsupported", reason: "unknown_schema_lineage")
        }
        // Row 8, a Class 4 boundary anywhere on the path.
        if steps.contains(where: { $0.transitionClass != .class2 && $0.transitionClass != .class3 }) {
            return SchemaDispatch(action: "unsupported", reason: "incompatible_schema_transition")
        }
        // Rows 5–7: an empty `rebuild_local` is never emitted.
        let entries = steps.filter { $0.transitionClass == .class3 }.flatMap(\.affectedScopes)
        let hit = AffectedScopes.covered(assigned, by: entries)
        if !hit.isEmpty { return SchemaDispatch(action: "rebuild_local", affected: hit) }
        return SchemaDispatch(action: "replace")
    }
}
