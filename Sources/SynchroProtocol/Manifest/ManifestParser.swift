/// Reads one manifest object with an exact member set: every required member present, nothing
/// outside `allowed`, no member twice.
struct ManifestObjectReader {
    let object: JSONObject
    /// Where the object sits, for errors (`manifest.tables[1].fields[0]`).
    let path: String

    init(_ value: JSONValue, path: String, required: [String], optional: [String] = []) throws(ManifestError) {
        guard case .object(let object) = value else { throw .notAnObject(path: path) }
        var seen: [String] = []
        seen.reserveCapacity(object.count)
        for member in object.members {
            let known = required.contains(where: member.key.exactlyEquals)
                || optional.contains(where: member.key.exactlyEquals)
            guard known else { throw .unknownMember(path: path, member: member.key) }
            guard !seen.contains(where: member.key.exactlyEquals) else {
                throw .duplicateMember(path: path, member: member.key)
            }
            seen.append(member.key)
        }
        for name in required where !seen.contains(where: name.exactlyEquals) {
            throw .missingMember(path: path, member: name)
        }
        self.object = object
        self.path = path
    }

    /// The member's value, or nil when an optional member is absent.
    func value(_ name: String) -> JSONValue? {
        object.members.first { $0.key.exactlyEquals(name) }?.value
    }

    func string(_ name: String, nonempty: Bool = true) throws(ManifestError) -> String {
        guard case .string(let text)? = value(name) else { throw .memberType(path: path, member: name) }
        if nonempty && text.isEmpty { throw .emptyString(path: path, member: name) }
        return text
    }

    func bool(_ name: String) throws(ManifestError) -> Bool {
        guard case .bool(let flag)? = value(name) else { throw .memberType(path: path, member: name) }
        return flag
    }

    func array(_ name: String) throws(ManifestError) -> [JSONValue] {
        guard case .array(let elements)? = value(name) else { throw .memberType(path: path, member: name) }
        return elements
    }

    /// A plain integer literal in ±(2^53−1); `invalid` is thrown for any other number.
    func integer(_ name: String, invalid: ManifestError) throws(ManifestError) -> Int64 {
        guard case .number(let number)? = value(name) else { throw .memberType(path: path, member: name) }
        guard !number.isNegativeZeroLiteral, let exact = number.exactInt64,
              exact.magnitude <= UInt64(SchemaReference.maxProtocolInteger)
        else { throw invalid }
        return exact
    }
}

/// Validation of the manifest members below the top level: tables, fields, lifecycle, indexes.
enum ManifestParser {
    static func table(_ value: JSONValue, path: String) throws(ManifestError) -> ManifestTable {
        let reader = try ManifestObjectReader(value, path: path, required: [
            "table_id", "relation_id", "name", "composition", "primary_key_field_id", "lifecycle", "fields", "indexes",
        ])
        let tableID = try reader.string("table_id")
        let relationID = try reader.string("relation_id")
        let name = try reader.string("name")
        guard let composition = ManifestTable.Composition(wireName: try reader.string("composition", nonempty: false))
        else { throw .unknownComposition(tableID: tableID) }
        let primaryKeyFieldID = try reader.string("primary_key_field_id", nonempty: false)

        let fields = try self.fields(try reader.array("fields"), tableID: tableID, path: path)
        let byID = Dictionary(uniqueKeysWithValues: fields.map { (ExactStringKey($0.fieldID), $0) })
        try checkPrimaryKey(byID[ExactStringKey(primaryKeyFieldID)], tableID: tableID)
        let lifecycle = try self.lifecycle(reader.value("lifecycle")!, fields: byID, tableID: tableID, path: path)
        let indexes = try self.indexes(try reader.array("indexes"), fields: byID, tableID: tableID, path: path)
        return ManifestTable(
            tableID: tableID, relationID: relationID, name: name, composition: composition,
            primaryKeyFieldID: primaryKeyFieldID, lifecycle: lifecycle, fields: fields, indexes: indexes)
    }

    /// Fields sorted by ID, nonempty, without repeats.
    private static func fields(
        _ values: [JSONValue], tableID: String, path: String
    ) throws(ManifestError) -> [ManifestField] {
        guard !values.isEmpty else { throw .noFields(tableID: tableID) }
        var fields: [ManifestField] = []
        fields.reserveCapacity(values.count)
        for (i, value) in values.enumerated() {
            fields.append(try field(value, tableID: tableID, path: "\(path).fields[\(i)]"))
        }
        fields.sort { $0.fieldID.utf8Precedes($1.fieldID) }
        for i in fields.indices.dropFirst() where fields[i - 1].fieldID.exactlyEquals(fields[i].fieldID) {
            throw .duplicateField(tableID: tableID, fieldID: fields[i].fieldID)
        }
        return fields
    }

    private static func field(
        _ value: JSONValue, tableID: String, path: String
    ) throws(ManifestError) -> ManifestField {
        let reader = try ManifestObjectReader(
            value, path: path, required: ["field_id", "name", "type", "nullable", "writable"],
            optional: ["precision", "scale"])
        let fieldID = try reader.string("field_id")
        let name = try reader.string("name")
        guard let type = PortableType(wireName: try reader.string("type", nonempty: false)) else {
            throw .unknownType(tableID: tableID, fieldID: fieldID)
        }
        let nullable = try reader.bool("nullable")
        let writable = try reader.bool("writable")
        var precision: Int?
        if reader.value("precision") != nil {
            let invalid = ManifestError.precisionOutOfRange(tableID: tableID, fieldID: fieldID)
            precision = Int(try reader.integer("precision", invalid: invalid))
        }
        var scale: Int?
        if reader.value("scale") != nil {
            scale = Int(try reader.integer("scale", invalid: .scaleOutOfRange(tableID: tableID, fieldID: fieldID)))
        }
        do throws(FieldSpecError) {
            let spec = try FieldSpec(type: type, nullable: nullable, precision: precision, scale: scale)
            return ManifestField(fieldID: fieldID, name: name, spec: spec, writable: writable)
        } catch {
            switch error {
            case .precisionScaleOnNonDecimal: throw .precisionScaleOnNonDecimal(tableID: tableID, fieldID: fieldID)
            case .precisionOutOfRange: throw .precisionOutOfRange(tableID: tableID, fieldID: fieldID)
            case .scaleOutOfRange: throw .scaleOutOfRange(tableID: tableID, fieldID: fieldID)
            default: throw .decimalPrecisionScaleMissing(tableID: tableID, fieldID: fieldID)
            }
        }
    }

    private static func checkPrimaryKey(_ field: ManifestField?, tableID: String) throws(ManifestError) {
        guard let field else { throw .primaryKeyFieldMissing(tableID: tableID) }
        guard field.type.isKeyType else { throw .primaryKeyType(tableID: tableID) }
        guard !field.nullable else { throw .primaryKeyNullable(tableID: tableID) }
        guard !field.writable else { throw .primaryKeyWritable(tableID: tableID) }
    }

    private static func lifecycle(
        _ value: JSONValue, fields: [ExactStringKey: ManifestField], tableID: String, path: String
    ) throws(ManifestError) -> ManifestTable.Lifecycle {
        let members = ["created_at_field_id", "updated_at_field_id", "deleted_at_field_id"]
        let reader = try ManifestObjectReader(value, path: "\(path).lifecycle", required: members)
        var named: [String?] = []
        for member in members {
            let value = reader.value(member)!
            if case .null = value {
                named.append(nil)
                continue
            }
            guard case .string(let fieldID) = value else { throw .memberType(path: reader.path, member: member) }
            guard let field = fields[ExactStringKey(fieldID)] else {
                throw .lifecycleFieldMissing(tableID: tableID, member: member)
            }
            guard field.type == .datetime else { throw .lifecycleFieldNotDatetime(tableID: tableID, member: member) }
            guard !field.writable else { throw .lifecycleFieldWritable(tableID: tableID, member: member) }
            named.append(fieldID)
        }
        return ManifestTable.Lifecycle(
            createdAtFieldID: named[0], updatedAtFieldID: named[1], deletedAtFieldID: named[2])
    }

    /// Indexes sorted by ID, without repeats, each naming only known fields.
    private static func indexes(
        _ values: [JSONValue], fields: [ExactStringKey: ManifestField], tableID: String, path: String
    ) throws(ManifestError) -> [ManifestIndex] {
        var indexes: [ManifestIndex] = []
        indexes.reserveCapacity(values.count)
        for (i, value) in values.enumerated() {
            let reader = try ManifestObjectReader(
                value, path: "\(path).indexes[\(i)]", required: ["index_id", "name", "field_ids", "unique"])
            let indexID = try reader.string("index_id")
            let name = try reader.string("name")
            var fieldIDs: [String] = []
            for element in try reader.array("field_ids") {
                guard case .string(let fieldID) = element else {
                    throw .memberType(path: reader.path, member: "field_ids")
                }
                guard fields[ExactStringKey(fieldID)] != nil else {
                    throw .indexUnknownField(tableID: tableID, indexID: indexID, fieldID: fieldID)
                }
                fieldIDs.append(fieldID)
            }
            guard !fieldIDs.isEmpty else { throw .indexWithoutFields(tableID: tableID, indexID: indexID) }
            let unique = try reader.bool("unique")
            indexes.append(ManifestIndex(indexID: indexID, name: name, fieldIDs: fieldIDs, unique: unique))
        }
        indexes.sort { $0.indexID.utf8Precedes($1.indexID) }
        for i in indexes.indices.dropFirst() where indexes[i - 1].indexID.exactlyEquals(indexes[i].indexID) {
            throw .duplicateIndex(tableID: tableID, indexID: indexes[i].indexID)
        }
        return indexes
    }
}
