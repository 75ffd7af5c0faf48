import SynchroProtocol
import SynchroStore

/// Strict reading of a 200 body (`spec/wire-protocol.md` §2.1): exact member sets, declared types, no
/// value echoed into the error. Every failure is ``SyncError/contract(rule:member:)``.
struct ResponseReader {
    let object: JSONObject
    let path: String

    init(_ value: JSONValue, path: String, required: Set<String>, optional: Set<String> = []) throws(SyncError) {
        do {
            let reader = try ExactObjectReader(value, path: path, required: required, optional: optional)
            object = reader.object
        } catch {
            throw .contract(rule: error.rule, member: error.member)
        }
        self.path = path
    }

    private func name(_ member: String) -> String { path.isEmpty ? member : "\(path).\(member)" }

    func has(_ member: String) -> Bool { object[member] != nil }

    func value(_ member: String) throws(SyncError) -> JSONValue {
        guard let value = object[member] else { throw .contract(rule: "missing_member", member: name(member)) }
        return value
    }

    func string(_ member: String) throws(SyncError) -> String {
        guard let string = try value(member).stringValue else {
            throw .contract(rule: "not_a_string", member: name(member))
        }
        return string
    }

    func nonEmptyString(_ member: String) throws(SyncError) -> String {
        let string = try string(member)
        guard !string.isEmpty else { throw .contract(rule: "empty_string", member: name(member)) }
        return string
    }

    func nullableString(_ member: String) throws(SyncError) -> String? {
        let value = try value(member)
        if value.isNull { return nil }
        guard let string = value.stringValue else { throw .contract(rule: "not_a_string", member: name(member)) }
        return string
    }

    func integer(_ member: String, minimum: Int64 = 0) throws(SyncError) -> Int64 {
        guard let number = try value(member).numberValue?.exactInt64, number >= minimum else {
            throw .contract(rule: "invalid_integer", member: name(member))
        }
        return number
    }

    func bool(_ member: String) throws(SyncError) -> Bool {
        guard let bool = try value(member).boolValue else {
            throw .contract(rule: "not_a_boolean", member: name(member))
        }
        return bool
    }

    func array(_ member: String) throws(SyncError) -> [JSONValue] {
        guard let array = try value(member).arrayValue else {
            throw .contract(rule: "not_an_array", member: name(member))
        }
        return array
    }

    func object(_ member: String) throws(SyncError) -> JSONObject {
        guard let object = try value(member).objectValue else {
            throw .contract(rule: "not_an_object", member: name(member))
        }
        return object
    }

    func stringArray(_ member: String) throws(SyncError) -> [String] {
        var strings: [String] = []
        for element in try array(member) {
            guard let string = element.stringValue, !string.isEmpty else {
                throw .contract(rule: "not_a_scope_id", member: name(member))
            }
            strings.append(string)
        }
        guard Set(strings).count == strings.count else {
            throw .contract(rule: "duplicate_entry", member: name(member))
        }
        return strings
    }

    func checksum(_ member: String) throws(SyncError) -> Checksum {
        do {
            return try Checksum(json: try value(member))
        } catch {
            throw .contract(rule: "invalid_checksum", member: name(member))
        }
    }
}

// MARK: - Connect

/// A validated connect 200 body (`spec/wire-protocol.md` §3.2).
struct ConnectResponse {
    let clientGeneration: Int64
    let scopeSetVersion: Int64
    let schema: SchemaReference
    let action: String
    let schemaDefinition: JSONValue?
    let affectedScopes: [String]?
    let added: [(scopeID: String, cursor: String?)]
    let removed: [String]
    let cursorUpdates: [(scopeID: String, cursor: String?)]

    static let actions: Set<String> = ["none", "replace", "rebuild_local", "unsupported"]

    init(json: JSONValue) throws(SyncError) {
        let top = try ResponseReader(
            json, path: "",
            required: [
                "server_time", "protocol_version", "client_generation", "scope_set_version", "schema", "scopes",
                "scope_cursor_updates",
            ],
            optional: ["schema_definition", "affected_scopes"])
        _ = try top.nonEmptyString("server_time")
        guard try top.integer("protocol_version") == 3 else {
            throw .contract(rule: "wrong_protocol_version", member: "protocol_version")
        }
        clientGeneration = try top.integer("client_generation", minimum: 1)
        scopeSetVersion = try top.integer("scope_set_version")
        let schemaValue = try top.value("schema")
        let schemaReader = try ResponseReader(
            schemaValue, path: "schema", required: ["version", "hash", "action"], optional: ["reason"])
        action = try schemaReader.string("action")
        guard Self.actions.contains(action) else { throw .contract(rule: "unknown_action", member: "schema.action") }
        guard schemaReader.has("reason") == (action == "unsupported") else {
            throw .contract(rule: "reason_presence", member: "schema.reason")
        }
        do {
            schema = try SchemaReference(
                json: .object(JSONObject([
                    JSONMember("version", try schemaReader.value("version")),
                    JSONMember("hash", try schemaReader.value("hash")),
                ])))
        } catch {
            throw .contract(rule: "invalid_schema_reference", member: "schema")
        }
        let needsDefinition = action == "replace" || action == "rebuild_local"
        guard top.has("schema_definition") == needsDefinition else {
            throw .contract(rule: "schema_definition_presence", member: "schema_definition")
        }
        schemaDefinition = needsDefinition ? try top.value("schema_definition") : nil
        if action == "rebuild_local" {
            let affected = try top.stringArray("affected_scopes")
            guard !affected.isEmpty else { throw .contract(rule: "empty_array", member: "affected_scopes") }
            affectedScopes = affected
        } else {
            guard !top.has("affected_scopes") else {
                throw .contract(rule: "forbidden_member", member: "affected_scopes")
            }
            affectedScopes = nil
        }
        let scopes = try ResponseReader(.object(try top.object("scopes")), path: "scopes", required: ["add", "remove"])
        var added: [(String, String?)] = []
        for item in try scopes.array("add") {
            let entry = try ResponseReader(item, path: "scopes.add[]", required: ["id", "cursor"])
            added.append((try entry.nonEmptyString("id"), try entry.nullableString("cursor")))
        }
        self.added = added
        removed = try scopes.stringArray("remove")
        var updates: [(String, String?)] = []
        for member in try top.object("scope_cursor_updates").members {
            guard !member.key.isEmpty else { throw .contract(rule: "empty_scope_id", member: "scope_cursor_updates") }
            if member.value.isNull {
                updates.append((member.key, nil))
            } else if let cursor = member.value.stringValue {
                updates.append((member.key, cursor))
            } else {
                throw .contract(rule: "not_a_string", member: "scope_cursor_updates.*")
            }
        }
        cursorUpdates = updates
        let addedIDs = added.map(\.0)
        guard Set(addedIDs).count == addedIDs.count, Set(addedIDs).isDisjoint(with: removed) else {
            throw .contract(rule: "conflicting_assignment", member: "scopes")
        }
        guard updates.allSatisfy({ !addedIDs.contains($0.0) && !removed.contains($0.0) }) else {
            throw .contract(rule: "cursor_update_for_changed_scope", member: "scope_cursor_updates")
        }
    }
}

// MARK: - Rows

/// The key value of an exact `pk` object: one member, named by the table's primary-key field ID (§2.6).
func keyValue(_ pk: JSONValue, tableID: String, manifest: SchemaManifest, member: String) throws(SyncError)
    -> JSONValue
{
    guard let table = manifest.table(id: tableID) else { throw .contract(rule: "unknown_table", member: member) }
    guard let object = pk.objectValue, object.count == 1, let value = object[table.primaryKeyFieldID] else {
        throw .contract(rule: "invalid_pk_object", member: member)
    }
    return value
}

/// One row-bearing record or change whose digest has been recomputed and matched.
struct VerifiedRow: Sendable {
    let tableID: String
    let primaryKey: JSONValue
    let row: JSONValue
    let serverVersion: String
    let identity: RowIdentity
    let digest: [UInt8]

    /// Recomputes the row digest under `digester`'s manifest and compares it with the received checksum.
    static func verify(
        _ reader: ResponseReader, digester: inout RowDigester
    ) throws(SyncError) -> VerifiedRow {
        let tableID = try reader.nonEmptyString("table")
        let primaryKey = try keyValue(
            reader.value("pk"), tableID: tableID, manifest: digester.manifest, member: "\(reader.path).pk")
        let row = try reader.value("row")
        let version = try reader.nonEmptyString("server_version")
        let received = try reader.checksum("row_checksum")
        let computed: (identity: RowIdentity, digest: [UInt8])
        do {
            computed = try digester.digest(tableID: tableID, primaryKey: primaryKey, row: row, serverVersion: version)
        } catch {
            throw .contract(rule: "invalid_row.\(error.rule)", member: "\(reader.path).row")
        }
        guard computed.digest == received.digest else {
            throw .contract(rule: "row_checksum_mismatch", member: "\(reader.path).row_checksum")
        }
        return VerifiedRow(
            tableID: tableID, primaryKey: primaryKey, row: row, serverVersion: version, identity: computed.identity,
            digest: computed.digest)
    }
}

// MARK: - Rebuild

/// A validated rebuild 200 body (`spec/wire-protocol.md` §6.2).
struct RebuildPage: Sendable {
    let records: [VerifiedRow]
    let outline: Outline

    /// Everything of the page but its records.
    struct Outline: Sendable {
        let cursor: String?
        let finalScopeCursor: String?
        let checksum: Checksum?

        var isFinal: Bool { cursor == nil }
    }

    init(json: JSONValue, scope: String, manifest: SchemaManifest) throws(SyncError) {
        let top = try ResponseReader(
            json, path: "", required: ["scope", "records", "cursor", "has_more"],
            optional: ["final_scope_cursor", "checksum"])
        guard try top.string("scope") == scope else { throw .contract(rule: "wrong_scope", member: "scope") }
        let hasMore = try top.bool("has_more")
        let cursor = try top.nullableString("cursor")
        if hasMore {
            guard let cursor, !cursor.isEmpty else { throw .contract(rule: "missing_continuation", member: "cursor") }
            guard !top.has("final_scope_cursor") else {
                throw .contract(rule: "forbidden_member", member: "final_scope_cursor")
            }
            guard !top.has("checksum") else { throw .contract(rule: "forbidden_member", member: "checksum") }
            outline = Outline(cursor: cursor, finalScopeCursor: nil, checksum: nil)
        } else {
            guard cursor == nil else { throw .contract(rule: "final_page_continuation", member: "cursor") }
            outline = Outline(
                cursor: nil, finalScopeCursor: try top.nonEmptyString("final_scope_cursor"),
                checksum: try top.checksum("checksum"))
        }
        var digester = RowDigester(manifest: manifest)
        var records: [VerifiedRow] = []
        var seen: Set<RowIdentity> = []
        for record in try top.array("records") {
            let reader = try ResponseReader(record, path: "records[]", required: Self.recordMembers)
            let verified = try VerifiedRow.verify(reader, digester: &digester)
            guard seen.insert(verified.identity).inserted else {
                throw .contract(rule: "duplicate_record", member: "records[]")
            }
            records.append(verified)
        }
        self.records = records
    }

    /// The members of every record.
    private static let recordMembers: Set<String> = ["table", "pk", "row", "row_checksum", "server_version"]
}

// MARK: - Pull

/// One validated pull change (`spec/wire-protocol.md` §5.3).
struct PullChange {
    let scope: String
    let tableID: String
    let primaryKey: JSONValue
    let isDelete: Bool
    let serverVersion: String
    /// The verified row for an upsert or a tombstone delete; nil for a rowless delete.
    let row: VerifiedRow?
}

/// A validated pull 200 body (`spec/wire-protocol.md` §5.2–§5.6), checked against the local scope set.
struct PullPage {
    let changes: [PullChange]
    let scopeSetVersion: Int64
    let scopeCursors: [(scopeID: String, cursor: String)]
    let added: [String]
    let removed: [String]
    let rebuild: [String]
    let hasMore: Bool
    let checksums: [String: Checksum]?

    init(json: JSONValue, localScopes: Set<String>, manifest: SchemaManifest) throws(SyncError) {
        let top = try ResponseReader(
            json, path: "",
            required: ["changes", "scope_set_version", "scope_cursors", "scope_updates", "rebuild", "has_more"],
            optional: ["checksums"])
        scopeSetVersion = try top.integer("scope_set_version")
        hasMore = try top.bool("has_more")
        let updates = try ResponseReader(
            .object(try top.object("scope_updates")), path: "scope_updates", required: ["add", "remove"])
        var added: [String] = []
        for item in try updates.array("add") {
            let entry = try ResponseReader(item, path: "scope_updates.add[]", required: ["id", "cursor"])
            guard try entry.value("cursor").isNull else {
                throw .contract(rule: "added_scope_cursor", member: "scope_updates.add[].cursor")
            }
            added.append(try entry.nonEmptyString("id"))
        }
        self.added = added
        removed = try updates.stringArray("remove")
        rebuild = try top.stringArray("rebuild")
        guard Set(added).count == added.count, Set(added).isDisjoint(with: removed),
            Set(removed).isSubset(of: localScopes)
        else {
            throw .contract(rule: "invalid_assignment_delta", member: "scope_updates")
        }
        let active = localScopes.subtracting(removed).union(added)
        guard Set(rebuild).isSubset(of: active) else { throw .contract(rule: "unknown_scope", member: "rebuild") }
        var cursors: [(String, String)] = []
        for member in try top.object("scope_cursors").members {
            guard active.contains(member.key) else { throw .contract(rule: "unknown_scope", member: "scope_cursors") }
            guard !rebuild.contains(member.key) else {
                throw .contract(rule: "cursor_for_rebuild_scope", member: "scope_cursors")
            }
            guard let cursor = member.value.stringValue, !cursor.isEmpty else {
                throw .contract(rule: "not_a_cursor", member: "scope_cursors.*")
            }
            cursors.append((member.key, cursor))
        }
        scopeCursors = cursors
        if hasMore {
            guard !top.has("checksums") else { throw .contract(rule: "forbidden_member", member: "checksums") }
            checksums = nil
        } else {
            var map: [String: Checksum] = [:]
            for member in try top.object("checksums").members {
                do {
                    map[member.key] = try Checksum(json: member.value)
                } catch {
                    throw .contract(rule: "invalid_checksum", member: "checksums.*")
                }
            }
            // §5.6 rule 3: exactly the active assigned set after this response's delta.
            guard Set(map.keys) == active else {
                throw .contract(rule: "checksum_key_set", member: "checksums")
            }
            checksums = map
        }
        var digester = RowDigester(manifest: manifest)
        var changes: [PullChange] = []
        for value in try top.array("changes") {
            let probe = try ResponseReader(
                value, path: "changes[]", required: ["scope", "table", "op", "pk", "server_version"],
                optional: ["row", "row_checksum"])
            let op = try probe.string("op")
            let scope = try probe.nonEmptyString("scope")
            guard active.contains(scope), !removed.contains(scope) else {
                throw .contract(rule: "unknown_scope", member: "changes[].scope")
            }
            switch op {
            case "upsert":
                let reader = try ResponseReader(
                    value, path: "changes[]",
                    required: ["scope", "table", "op", "pk", "row", "row_checksum", "server_version"])
                let row = try VerifiedRow.verify(reader, digester: &digester)
                changes.append(PullChange(
                    scope: scope, tableID: row.tableID, primaryKey: row.primaryKey, isDelete: false,
                    serverVersion: row.serverVersion, row: row))
            case "delete":
                guard probe.has("row") == probe.has("row_checksum") else {
                    throw .contract(rule: "tombstone_shape", member: "changes[]")
                }
                if probe.has("row") {
                    let row = try VerifiedRow.verify(probe, digester: &digester)
                    changes.append(PullChange(
                        scope: scope, tableID: row.tableID, primaryKey: row.primaryKey, isDelete: true,
                        serverVersion: row.serverVersion, row: row))
                } else {
                    let tableID = try probe.nonEmptyString("table")
                    let primaryKey = try keyValue(
                        probe.value("pk"), tableID: tableID, manifest: manifest, member: "changes[].pk")
                    do {
                        _ = try RowIdentity(manifest: manifest, tableID: tableID, primaryKey: primaryKey)
                    } catch {
                        throw .contract(rule: "invalid_key.\(error.rule)", member: "changes[].pk")
                    }
                    changes.append(PullChange(
                        scope: scope, tableID: tableID, primaryKey: primaryKey, isDelete: true,
                        serverVersion: try probe.nonEmptyString("server_version"), row: nil))
                }
            default:
                throw .contract(rule: "unknown_operation", member: "changes[].op")
            }
        }
        self.changes = changes
    }
}
