import SynchroProtocol

/// Publishing the next manifest of a served lineage with the operator credential (`docs/server.md`, "Schema
/// publication"): the served manifest is read, edited, given its version, parent, class, floor and hash, and
/// posted to `/operator/schema`. `send` is the HTTP exchange (an in-process server or a `seedkit serve` process).
public struct SchemaPublication {
    /// One exchange: method, path, body, headers → status and body.
    public typealias Send = (String, String, [UInt8], [(String, String)]) throws -> (Int, [UInt8])

    let operatorToken: String
    let send: Send

    /// A publisher that authenticates with `operatorToken` and talks through `send`.
    public init(operatorToken: String, send: @escaping Send) {
        self.operatorToken = operatorToken
        self.send = send
    }

    /// Why a publication did not happen.
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// Edits the served manifest, publishes it as the next version of `transition` and returns its reference.
    @discardableResult
    public func publish(
        transition: String, affected: [String]? = nil, defaults: JSONValue? = nil,
        _ edit: (inout ManifestEdit) -> Void
    ) throws -> SchemaReference {
        let (status, served) = try send("GET", "/sync/schema", [], [])
        guard status == 200 else { throw Failure(description: "GET /sync/schema answered \(status)") }
        let json = try StrictJSONParser().parse(served)
        let parent = try SchemaManifest(json: json)
        var manifest = ManifestEdit(json: json)
        edit(&manifest)
        let version = parent.schemaVersion + 1
        var members = (manifest.json.objectValue?.members ?? []).filter {
            !["schema_version", "schema_hash", "parent_schema", "transition_class", "compatibility_floor"]
                .contains($0.key)
        }
        members += [
            JSONMember("schema_version", .number(JSONNumber(version))),
            JSONMember("parent_schema", .object(JSONObject([
                JSONMember("version", .number(JSONNumber(parent.schemaVersion))),
                JSONMember("hash", .string(parent.schemaHash)),
            ]))),
            JSONMember("transition_class", .string(transition)),
            JSONMember("compatibility_floor", .number(JSONNumber(
                transition == "class_2" ? parent.compatibilityFloor : version))),
        ]
        let hash = try SchemaManifest.computeHash(json: .object(JSONObject(members)))
        let body = JSONValue.object(JSONObject(members + [JSONMember("schema_hash", .string(hash))]))
        var request = [JSONMember("manifest", body)]
        if let affected {
            request.append(JSONMember("affected_scopes", .array(affected.map(JSONValue.string))))
        }
        if let defaults {
            request.append(JSONMember("defaults", defaults))
        }
        let (published, answer) = try send(
            "POST", "/operator/schema", try CanonicalJSON.encode(.object(JSONObject(request))),
            [("Authorization", "Bearer \(operatorToken)"), ("Content-Type", "application/json")])
        guard published == 200 else {
            throw Failure(description: "publication failed: \(published) \(String(decoding: answer, as: UTF8.self))")
        }
        return try SchemaReference(version: version, hash: hash)
    }
}

/// Table and field edits of a manifest object.
public struct ManifestEdit {
    /// The manifest object being edited (its version, parent, class and hash are set when it is published).
    public var json: JSONValue

    /// An edit of `json`.
    public init(json: JSONValue) {
        self.json = json
    }

    /// Edits the fields of a table.
    public mutating func addField(_ tableID: String, _ fieldID: String, type: String, nullable: Bool = true) {
        let field = JSONValue.object(JSONObject([
            JSONMember("field_id", .string(fieldID)), JSONMember("name", .string(fieldID)),
            JSONMember("type", .string(type)), JSONMember("nullable", .bool(nullable)),
            JSONMember("writable", .bool(true)),
        ]))
        editFields(tableID) { $0 + [field] }
    }

    /// Edits the fields of a table.
    public mutating func removeField(_ tableID: String, _ fieldID: String) {
        editFields(tableID) { $0.filter { $0.objectValue?["field_id"] != .string(fieldID) } }
    }

    private mutating func editFields(_ tableID: String, _ edit: ([JSONValue]) -> [JSONValue]) {
        let members = (json.objectValue?.members ?? []).map { member -> JSONMember in
            guard member.key == "tables" else { return member }
            return JSONMember("tables", .array((member.value.arrayValue ?? []).map { table in
                guard table.objectValue?["table_id"] == .string(tableID) else { return table }
                return .object(JSONObject((table.objectValue?.members ?? []).map {
                    $0.key == "fields" ? JSONMember("fields", .array(edit($0.value.arrayValue ?? []))) : $0
                }))
            }))
        }
        json = .object(JSONObject(members))
    }
}

/// More manifest edits for the schema evolution tests: field attributes, tables, indexes.
extension ManifestEdit {
    /// Sets one member of a field object (`nullable`, `writable`, …).
    public mutating func setField(_ tableID: String, _ fieldID: String, _ key: String, _ value: JSONValue) {
        editTable(tableID) { members in
            members = members.map { member in
                guard member.key == "fields" else { return member }
                return JSONMember("fields", .array((member.value.arrayValue ?? []).map { field in
                    guard field.objectValue?["field_id"] == .string(fieldID) else { return field }
                    return .object(JSONObject(Self.replacing(key, value, in: field.objectValue?.members ?? [])))
                }))
            }
        }
    }

    /// Sets one member of a table object (`composition`, `relation_id`, `indexes`, …).
    public mutating func setTable(_ tableID: String, _ key: String, _ value: JSONValue) {
        editTable(tableID) { $0 = Self.replacing(key, value, in: $0) }
    }

    /// Appends a table object.
    public mutating func addTable(_ table: JSONValue) {
        json = .object(JSONObject((json.objectValue?.members ?? []).map { member in
            member.key == "tables" ? JSONMember("tables", .array((member.value.arrayValue ?? []) + [table])) : member
        }))
    }

    /// The `indexes` array of a table.
    public func indexes(_ tableID: String) -> [JSONValue] {
        let table = json.objectValue?["tables"]?.arrayValue?.first { $0.objectValue?["table_id"] == .string(tableID) }
        return table?.objectValue?["indexes"]?.arrayValue ?? []
    }

    private mutating func editTable(_ tableID: String, _ edit: (inout [JSONMember]) -> Void) {
        json = .object(JSONObject((json.objectValue?.members ?? []).map { member in
            guard member.key == "tables" else { return member }
            return JSONMember("tables", .array((member.value.arrayValue ?? []).map { table in
                guard table.objectValue?["table_id"] == .string(tableID) else { return table }
                var members = table.objectValue?.members ?? []
                edit(&members)
                return .object(JSONObject(members))
            }))
        }))
    }

    private static func replacing(_ key: String, _ value: JSONValue, in members: [JSONMember]) -> [JSONMember] {
        members.contains { $0.key == key }
            ? members.map { $0.key == key ? JSONMember(key, value) : $0 } : members + [JSONMember(key, value)]
    }
}

/// Table and field objects the schema-change tests publish.
extension ManifestEdit {
    /// A field object.
    public static func field(_ id: String, _ name: String, _ type: String, nullable: Bool, writable: Bool) -> JSONValue {
        .object(JSONObject([
            JSONMember("field_id", .string(id)), JSONMember("name", .string(name)), JSONMember("type", .string(type)),
            JSONMember("nullable", .bool(nullable)), JSONMember("writable", .bool(writable)),
        ]))
    }

    /// A new table `labels` (`tbl_labels`): a string key `id` and one writable text field `text`, for a Class 2
    /// "new table" publication (the dataset declares no scope for it, so it stays empty).
    public static func labelsTable(textNullable: Bool, indexes: [JSONValue] = []) -> JSONValue {
        .object(JSONObject([
            JSONMember("table_id", .string("tbl_labels")), JSONMember("relation_id", .string("rel_labels")),
            JSONMember("name", .string("labels")), JSONMember("composition", .string("single_scope")),
            JSONMember("primary_key_field_id", .string("fld_label_id")),
            JSONMember("lifecycle", .object(JSONObject([
                JSONMember("created_at_field_id", .null), JSONMember("updated_at_field_id", .null),
                JSONMember("deleted_at_field_id", .null),
            ]))),
            JSONMember("fields", .array([
                field("fld_label_id", "id", "string", nullable: false, writable: false),
                field("fld_label_text", "text", "string", nullable: textNullable, writable: true),
            ])),
            JSONMember("indexes", .array(indexes)),
        ]))
    }
}
