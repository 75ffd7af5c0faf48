import SynchroProtocol

/// The LocalSchemaTable JSON of `local_schema` and of archive rows (`spec/client-store.md` §5.1).
///
/// Writing: the Swift member names in the order the spec lists them, absent optionals as explicit `null`
/// (the seed exporter's spelling, which both SDKs decode), and always an `indexes` array.
/// Reading: unknown members are ignored and `indexes` defaults to empty, as the Swift decoder does.
public enum LocalSchemaJSON {
    package static func encode(_ tables: [LocalSchemaTable]) throws(ClientStoreError) -> String {
        do {
            return try OrderedJSONWriter.encode(.array(tables.map(json)))
        } catch {
            throw .invalidLocalSchema(reason: "a name has no RFC 8785 form")
        }
    }

    package static func decode(_ text: String) throws(ClientStoreError) -> [LocalSchemaTable] {
        let value: JSONValue
        do {
            value = try StrictJSONParser().parse(text)
        } catch {
            throw .invalidLocalSchema(reason: "not strict JSON (\(error.rule.rawValue))")
        }
        guard case .array(let elements) = value else { throw .invalidLocalSchema(reason: "not a JSON array") }
        var tables: [LocalSchemaTable] = []
        for (index, element) in elements.enumerated() {
            do throws(DecodeFailure) {
                tables.append(try table(element))
            } catch {
                throw .invalidLocalSchema(reason: "table \(index): \(error.reason)")
            }
        }
        return tables
    }

    // MARK: - Writing

    /// The client's spelling: `composition` null when unknown and always an `indexes` array.
    package static func json(_ table: LocalSchemaTable) -> JSONValue {
        json(table, seedExporterForm: false)
    }

    /// The seed exporter's spelling when `seedExporterForm` (`spec/seed-format.md` §2.4.1): `composition`
    /// omitted when unknown and `indexes` omitted when there are none.
    public static func json(_ table: LocalSchemaTable, seedExporterForm: Bool) -> JSONValue {
        var members = [
            JSONMember("tableID", .string(table.tableID)),
            JSONMember("relationID", .string(table.relationID)),
            JSONMember("tableName", .string(table.tableName)),
            JSONMember("primaryKeyFieldID", .string(table.primaryKeyFieldID)),
            JSONMember("createdAtFieldID", optional(table.createdAtFieldID)),
            JSONMember("updatedAtFieldID", optional(table.updatedAtFieldID)),
            JSONMember("deletedAtFieldID", optional(table.deletedAtFieldID)),
            JSONMember("updatedAtColumn", .string(table.updatedAtColumn)),
            JSONMember("deletedAtColumn", .string(table.deletedAtColumn)),
        ]
        if !seedExporterForm || !(table.composition ?? "").isEmpty {
            members.append(JSONMember("composition", optional(table.composition)))
        }
        members.append(JSONMember("primaryKey", .array(table.primaryKey.map(JSONValue.string))))
        members.append(JSONMember("columns", .array(table.columns.map(json))))
        if !seedExporterForm || !table.indexes.isEmpty {
            members.append(JSONMember("indexes", .array(table.indexes.map(json))))
        }
        return .object(JSONObject(members))
    }

    private static func json(_ column: LocalSchemaColumn) -> JSONValue {
        .object(JSONObject([
            JSONMember("fieldID", .string(column.fieldID)),
            JSONMember("name", .string(column.name)),
            JSONMember("logicalType", .string(column.logicalType.rawValue)),
            JSONMember("nullable", .bool(column.nullable)),
            JSONMember("writable", .bool(column.writable)),
            JSONMember("precision", column.precision.map { .number(JSONNumber(Int64($0))) } ?? .null),
            JSONMember("scale", column.scale.map { .number(JSONNumber(Int64($0))) } ?? .null),
            JSONMember("sqliteDefaultSQL", optional(column.sqliteDefaultSQL)),
            JSONMember("isPrimaryKey", .bool(column.isPrimaryKey)),
        ]))
    }

    private static func json(_ index: LocalSchemaIndex) -> JSONValue {
        .object(JSONObject([
            JSONMember("indexID", .string(index.indexID)),
            JSONMember("name", .string(index.name)),
            JSONMember("fieldIDs", .array(index.fieldIDs.map(JSONValue.string))),
            JSONMember("unique", .bool(index.unique)),
        ]))
    }

    private static func optional(_ text: String?) -> JSONValue {
        text.map(JSONValue.string) ?? .null
    }

    // MARK: - Reading

    package struct DecodeFailure: Error {
        let reason: String
    }

    private struct Reader {
        let object: JSONObject

        init(_ value: JSONValue, what: String) throws(DecodeFailure) {
            guard case .object(let object) = value else { throw DecodeFailure(reason: "\(what) is not an object") }
            self.object = object
        }

        func string(_ key: String) throws(DecodeFailure) -> String {
            guard case .string(let text)? = object[key] else { throw DecodeFailure(reason: "\(key) is not a string") }
            return text
        }

        func optionalString(_ key: String) throws(DecodeFailure) -> String? {
            switch object[key] {
            case nil, .null?: return nil
            case .string(let text)?: return text
            default: throw DecodeFailure(reason: "\(key) is not a string or null")
            }
        }

        func bool(_ key: String) throws(DecodeFailure) -> Bool {
            guard case .bool(let flag)? = object[key] else { throw DecodeFailure(reason: "\(key) is not a boolean") }
            return flag
        }

        func optionalInt(_ key: String) throws(DecodeFailure) -> Int? {
            switch object[key] {
            case nil, .null?: return nil
            case .number(let number)?:
                guard let exact = number.exactInt64, let value = Int(exactly: exact) else {
                    throw DecodeFailure(reason: "\(key) is not an integer")
                }
                return value
            default: throw DecodeFailure(reason: "\(key) is not a number or null")
            }
        }

        func array(_ key: String, required: Bool = true) throws(DecodeFailure) -> [JSONValue] {
            switch object[key] {
            case .array(let elements)?: return elements
            case nil where !required, .null? where !required: return []
            default: throw DecodeFailure(reason: "\(key) is not an array")
            }
        }

        func strings(_ key: String) throws(DecodeFailure) -> [String] {
            var result: [String] = []
            for element in try array(key) {
                guard case .string(let text) = element else { throw DecodeFailure(reason: "\(key) holds a non-string") }
                result.append(text)
            }
            return result
        }
    }

    private static func table(_ value: JSONValue) throws(DecodeFailure) -> LocalSchemaTable {
        let reader = try Reader(value, what: "table")
        var columns: [LocalSchemaColumn] = []
        for element in try reader.array("columns") {
            columns.append(try column(element))
        }
        var indexes: [LocalSchemaIndex] = []
        for element in try reader.array("indexes", required: false) {
            indexes.append(try index(element))
        }
        return LocalSchemaTable(
            tableID: try reader.string("tableID"), relationID: try reader.string("relationID"),
            tableName: try reader.string("tableName"), primaryKeyFieldID: try reader.string("primaryKeyFieldID"),
            createdAtFieldID: try reader.optionalString("createdAtFieldID"),
            updatedAtFieldID: try reader.optionalString("updatedAtFieldID"),
            deletedAtFieldID: try reader.optionalString("deletedAtFieldID"),
            updatedAtColumn: try reader.string("updatedAtColumn"),
            deletedAtColumn: try reader.string("deletedAtColumn"),
            composition: try reader.optionalString("composition"), primaryKey: try reader.strings("primaryKey"),
            columns: columns, indexes: indexes)
    }

    private static func column(_ value: JSONValue) throws(DecodeFailure) -> LocalSchemaColumn {
        let reader = try Reader(value, what: "column")
        let typeName = try reader.string("logicalType")
        guard let type = PortableType(wireName: typeName) else {
            throw DecodeFailure(reason: "logicalType is not a portable type")
        }
        return LocalSchemaColumn(
            fieldID: try reader.string("fieldID"), name: try reader.string("name"), logicalType: type,
            nullable: try reader.bool("nullable"), writable: try reader.bool("writable"),
            precision: try reader.optionalInt("precision"), scale: try reader.optionalInt("scale"),
            sqliteDefaultSQL: try reader.optionalString("sqliteDefaultSQL"),
            isPrimaryKey: try reader.bool("isPrimaryKey"))
    }

    private static func index(_ value: JSONValue) throws(DecodeFailure) -> LocalSchemaIndex {
        let reader = try Reader(value, what: "index")
        return LocalSchemaIndex(
            indexID: try reader.string("indexID"), name: try reader.string("name"),
            fieldIDs: try reader.strings("fieldIDs"), unique: try reader.bool("unique"))
    }
}
