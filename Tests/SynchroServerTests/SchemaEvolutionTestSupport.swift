import Foundation
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// Successor manifests built from the served one, and the operator's publication request.
struct ManifestEditor {
    /// The manifest object being edited (its `schema_hash` is recomputed by ``successor``).
    var json: JSONValue
    /// The manifest the edits started from: the default parent of ``successor``.
    let base: SchemaManifest

    /// The manifest the server serves now (`GET /sync/schema`).
    static func current(_ server: RunningServer) throws -> ManifestEditor {
        let reply = try server.send("GET", "/sync/schema", body: [], headers: [])
        try #require(reply.status == 200)
        return ManifestEditor(json: reply.json, base: try SchemaManifest(json: reply.json))
    }

    // MARK: Edits

    mutating func editTable(_ tableID: String, _ edit: (inout [JSONMember]) -> Void) {
        json = Self.mapMember(json, "tables") { tables in
            .array((tables.arrayValue ?? []).map { table in
                guard table.objectValue?["table_id"] == .string(tableID) else { return table }
                var members = table.objectValue?.members ?? []
                edit(&members)
                return .object(JSONObject(members))
            })
        }
    }

    mutating func addField(
        _ tableID: String, _ fieldID: String, type: String = "int", nullable: Bool = true, writable: Bool = true
    ) {
        let field = object([
            "field_id": .string(fieldID), "name": .string(fieldID), "type": .string(type),
            "nullable": .bool(nullable), "writable": .bool(writable),
        ])
        editTable(tableID) { members in
            Self.mapMembers(&members, "fields") { .array(($0.arrayValue ?? []) + [field]) }
        }
    }

    mutating func removeField(_ tableID: String, _ fieldID: String) {
        editTable(tableID) { members in
            Self.mapMembers(&members, "fields") { fields in
                .array((fields.arrayValue ?? []).filter { $0.objectValue?["field_id"] != .string(fieldID) })
            }
        }
    }

    /// Sets one member of one field (`nullable`, `type`, `name`, …).
    mutating func setField(_ tableID: String, _ fieldID: String, _ name: String, _ value: JSONValue) {
        editTable(tableID) { members in
            Self.mapMembers(&members, "fields") { fields in
                .array((fields.arrayValue ?? []).map { field in
                    guard field.objectValue?["field_id"] == .string(fieldID) else { return field }
                    var members = field.objectValue?.members ?? []
                    Self.mapMembers(&members, name) { _ in value }
                    return .object(JSONObject(members))
                })
            }
        }
    }

    /// Sets a table-level member (`composition`, `name`, `primary_key_field_id`, …).
    mutating func setTable(_ tableID: String, _ name: String, _ value: JSONValue) {
        editTable(tableID) { members in Self.mapMembers(&members, name) { _ in value } }
    }

    mutating func removeTable(_ tableID: String) {
        json = Self.mapMember(json, "tables") { tables in
            .array((tables.arrayValue ?? []).filter { $0.objectValue?["table_id"] != .string(tableID) })
        }
    }

    /// A successor of `parent` with these tables: the next version, the exact parent, the class,
    /// the floor §7.1 defines (unless given), and the recomputed hash (unless `hash` is given).
    func successor(
        of parent: SchemaManifest? = nil, transition: String, version: Int64? = nil, floor: Int64? = nil,
        parentReference: JSONValue? = nil, hash: String? = nil
    ) throws -> JSONValue {
        let parent = parent ?? base
        let version = version ?? parent.schemaVersion + 1
        var members = (json.objectValue?.members ?? []).filter {
            !["schema_version", "schema_hash", "parent_schema", "transition_class", "compatibility_floor"]
                .contains($0.key)
        }
        members += [
            JSONMember("schema_version", .number(JSONNumber(version))),
            JSONMember("parent_schema", parentReference ?? object([
                "version": .number(JSONNumber(parent.schemaVersion)), "hash": .string(parent.schemaHash),
            ])),
            JSONMember("transition_class", .string(transition)),
            JSONMember("compatibility_floor", .number(JSONNumber(
                floor ?? (transition == "class_2" ? parent.compatibilityFloor : version)))),
        ]
        let body = JSONValue.object(JSONObject(members))
        let computed = try SchemaManifest.computeHash(json: body)
        return .object(JSONObject(members + [JSONMember("schema_hash", .string(hash ?? computed))]))
    }

    private static func mapMember(_ value: JSONValue, _ name: String, _ transform: (JSONValue) -> JSONValue)
        -> JSONValue
    {
        var members = value.objectValue?.members ?? []
        mapMembers(&members, name, transform)
        return .object(JSONObject(members))
    }

    /// Replaces member `name` (appending it when absent) with `transform(old value or null)`.
    private static func mapMembers(
        _ members: inout [JSONMember], _ name: String, _ transform: (JSONValue) -> JSONValue
    ) {
        if let i = members.firstIndex(where: { $0.key == name }) {
            members[i] = JSONMember(name, transform(members[i].value))
        } else {
            members.append(JSONMember(name, transform(.null)))
        }
    }
}

extension RunningServer {
    /// `POST /operator/schema` with the operator credential.
    func publish(_ manifest: JSONValue, affected: [String]? = nil, defaults: JSONValue? = nil) throws -> Reply {
        var members = [JSONMember("manifest", manifest)]
        if let affected { members.append(JSONMember("affected_scopes", .array(affected.map(JSONValue.string)))) }
        if let defaults { members.append(JSONMember("defaults", defaults)) }
        return try publish(body: .object(JSONObject(members)))
    }

    func publish(body: JSONValue) throws -> Reply {
        try send("POST", "/operator/schema", body: try CanonicalJSON.encode(body), headers: [
            ("Authorization", "Bearer \(RunningServer.operatorToken)"), ("Content-Type", "application/json"),
        ])
    }

    /// Publishes and requires success; returns the published manifest.
    @discardableResult
    func published(_ manifest: JSONValue, affected: [String]? = nil, defaults: JSONValue? = nil) throws
        -> SchemaManifest
    {
        let reply = try publish(manifest, affected: affected, defaults: defaults)
        try #require(reply.status == 200, "publication failed: \(reply.text)")
        return try SchemaManifest(json: manifest)
    }
}

/// A client synced at the initial schema: a final rebuild cursor per assigned scope.
struct SyncedClient {
    let client: WireClient
    let cursors: [String: String]

    static func make(_ server: RunningServer, user: String = "alice") throws -> SyncedClient {
        let client = try WireClient.connect(server, user: user)
        var cursors: [String: String] = [:]
        for scope in client.scopes {
            let cursor: String = try #require(try client.rebuild(scope: scope, limit: 1000).finalCursor)
            cursors[scope] = cursor
        }
        return SyncedClient(client: client, cursors: cursors)
    }

    /// Connect as a continuing client on the installed schema, presenting every cursor.
    func reconnect(reset: Bool = false, schema: JSONValue? = nil) throws -> RunningServer.Reply {
        let known = JSONValue.object(JSONObject(cursors.sorted { $0.key < $1.key }.map {
            JSONMember($0.key, object(["cursor": .string($0.value)]))
        }))
        var members = [
            JSONMember("client_id", .string(client.clientID)),
            JSONMember("client_generation", .number(JSONNumber(client.generation))),
            JSONMember("platform", .string("ios")), JSONMember("app_version", .string("1.0.0")),
            JSONMember("protocol_version", .number(JSONNumber(3))),
            JSONMember("schema", schema ?? client.schema),
            JSONMember("scope_set_version", .number(JSONNumber(client.scopeSetVersion))),
            JSONMember("known_scopes", known),
        ]
        if reset { members.append(JSONMember("schema_reset", .bool(true))) }
        return try client.server.post("/sync/connect", .object(JSONObject(members)), as: client.user)
    }

    /// The client after applying a `replace` or `rebuild_local` answer: the new schema and manifest,
    /// non-null replacement cursors installed and null ones dropped.
    func migrated(by reply: RunningServer.Reply) throws -> SyncedClient {
        let body = reply.object
        let manifest = try SchemaManifest(json: try #require(body["schema_definition"]))
        var cursors = self.cursors
        for member in try #require(body["scope_cursor_updates"]?.objectValue).members {
            cursors[member.key] = member.value.stringValue
        }
        let migrated = WireClient(
            server: client.server, user: client.user, clientID: client.clientID,
            generation: try #require(body["client_generation"]?.numberValue?.exactInt64),
            schema: manifest.reference.json, schemaHash: manifest.schemaHash, manifest: manifest,
            scopeSetVersion: try #require(body["scope_set_version"]?.numberValue?.exactInt64), scopes: client.scopes)
        return SyncedClient(client: migrated, cursors: cursors)
    }
}

extension RunningServer.Reply {
    var action: String? { object["schema"]?.objectValue?["action"]?.stringValue }
    var reason: String? { object["schema"]?.objectValue?["reason"]?.stringValue }
    var affectedScopes: [String]? { object["affected_scopes"]?.arrayValue?.compactMap(\.stringValue) }
    var cursorUpdates: JSONObject { object["scope_cursor_updates"]?.objectValue ?? JSONObject([]) }
    var rule: String? { errorMember("rule")?.stringValue }
}

/// The RFC 8785 text of a JSON value: comparisons that ignore member order.
func canonical(_ value: JSONValue?) -> String? {
    value.flatMap { try? CanonicalJSON.string($0) }
}
