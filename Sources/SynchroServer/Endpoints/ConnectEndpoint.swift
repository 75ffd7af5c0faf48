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

        return try db.transaction(kind: .immediate) {
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

            // Seed receipts: assigned scopes come back in `add`; unassigned ones in `remove` (§3.6).
            for (scope, _) in request.seedReceipts ?? [] {
                if now.contains(scope) {
                    if !added.contains(scope) { added.append(scope) }
                } else if !removed.contains(scope) {
                    removed.append(scope)
                }
            }

            let updates = try cursorUpdates(
                request: request, client: client, dispatch: dispatch, renewed: renewed && existing != nil,
                kept: Set(assignedNow).subtracting(added), state: &state)
            if dispatch.action != "unsupported" { client.schemaVersion = current.schemaVersion }
            try ClientRecord.bind(client: request.clientID, to: context.user, in: db)
            try client.save(to: db)

            return EndpointReply(json: try response(
                context: context, client: client, current: current, dispatch: dispatch,
                added: added.byteOrdered(), removed: removed.byteOrdered(), updates: updates, state: &state))
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

    /// Row 2 of §3.3: the fresh sentinel only from a never-seen identity, without generation or
    /// reset; a known identity must present its generation.
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
    /// renewal every kept scope with a presented cursor gets null (§13 point 8).
    private static func cursorUpdates(
        request: ConnectRequest, client: ClientRecord, dispatch: SchemaDispatch, renewed: Bool, kept: Set<String>,
        state: inout EngineState
    ) throws -> [(String, String?)] {
        var updates: [(String, String?)] = []
        let changesSchema = dispatch.action == "replace" || dispatch.action == "rebuild_local"
        for entry in request.knownScopes.entries where kept.contains(entry.scopeID) {
            guard let token = entry.cursor else { continue }
            if renewed || dispatch.resetAll {
                updates.append((entry.scopeID, nil))
                continue
            }
            guard changesSchema, request.schema != nil else { continue }
            guard let payload = try? state.cursorSigner.verify(token), var cursor = PullCursor(payload: payload),
                  cursor.user.exactlyEquals(client.userID), cursor.client.exactlyEquals(client.clientID),
                  cursor.scope.exactlyEquals(entry.scopeID), !dispatch.affected.contains(entry.scopeID),
                  try cursor.streamGeneration == state.store.metaInteger("stream_generation"),
                  try cursor.membershipGeneration == state.store.metaInteger("membership_generation"),
                  try cursor.retentionGeneration == state.store.metaInteger("retention_generation")
            else {
                updates.append((entry.scopeID, nil))
                continue
            }
            cursor.schemaHash = state.manifest.schemaHash
            cursor.generation = client.generation
            updates.append((entry.scopeID, state.cursorSigner.issue(cursor.payload)))
        }
        return updates.sorted { $0.0.utf8Precedes($1.0) }
    }

    private static func response(
        context: EndpointContext, client: ClientRecord, current: SchemaManifest, dispatch: SchemaDispatch,
        added: [String], removed: [String], updates: [(String, String?)], state: inout EngineState
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
                JSONMember("add", .array(added.map { scope in
                    .object(JSONObject([JSONMember("id", .string(scope)), JSONMember("cursor", .null)]))
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
struct SchemaDispatch {
    var action: String
    var reason: String?
    /// Scopes to rebuild for `rebuild_local`.
    var affected: [String] = []
    /// A valid explicit reset: every kept cursor becomes null.
    var resetAll = false

    static func decide(
        request: ConnectRequest, client: ClientRecord, assigned: [String], current: SchemaManifest, store: ServerStore
    ) throws -> SchemaDispatch {
        guard let presented = request.schema else { return SchemaDispatch(action: "replace") }
        if request.schemaReset {
            guard try store.manifest(presented) != nil else {
                return SchemaDispatch(action: "unsupported", reason: "unknown_schema_lineage")
            }
            return assigned.isEmpty
                ? SchemaDispatch(action: "replace", resetAll: true)
                : SchemaDispatch(action: "rebuild_local", affected: assigned, resetAll: true)
        }
        if presented == current.reference { return SchemaDispatch(action: "none") }
        guard try store.manifest(presented) != nil, presented.version < current.schemaVersion else {
            return SchemaDispatch(action: "unsupported", reason: "unknown_schema_lineage")
        }
        let later = try store.db.cachedStatement(
            "SELECT transition_class, affected_scopes FROM manifests WHERE version > ? ORDER BY version"
        ).rows([.integer(presented.version)])
        var affected = Set<String>()
        var hasClass3 = false
        for row in later {
            switch row[0].textValue {
            case "class_2": continue
            case "class_3":
                hasClass3 = true
                let scopes = try StrictJSONParser().parse(Array((row[1].textValue ?? "[]").utf8))
                for scope in scopes.arrayValue ?? [] { if let id = scope.stringValue { affected.insert(id) } }
            default:
                return SchemaDispatch(action: "unsupported", reason: "incompatible_schema_transition")
            }
        }
        let hit = assigned.filter { affected.contains($0) }
        if hasClass3 && !hit.isEmpty { return SchemaDispatch(action: "rebuild_local", affected: hit) }
        return SchemaDispatch(action: "replace")
    }
}
