import SynchroClient
import SynchroProtocol

/// The `local_schema` metadata value of a seed (`spec/seed-format.md` §2.4.1): the LocalSchemaTable array in
/// the exporter's spelling — absent optional IDs as JSON null, `composition` omitted when unknown, decimal
/// precision/scale null on other types, `sqliteDefaultSQL` null.
///
/// Indexes: upstream writes no `indexes` key, so a manifest that declares indexes yields a seed that both SDK
/// validators reject (§9 item 2). seedkit writes the Swift form (`fieldIDs`) when the manifest declares
/// indexes — what the Swift installer and seedkit's own installer compare against — and nothing otherwise,
/// so index-free manifests produce exactly the upstream bytes (docs/decisions.md, "Seeds of indexed manifests").
public enum SeedLocalSchema {
    /// The JSON value for `tables`, in manifest table order.
    public static func json(_ tables: [LocalSchemaTable]) -> JSONValue {
        .array(tables.map(table))
    }

    /// The RFC 8785 text stored in `_synchro_meta.local_schema`.
    public static func text(_ tables: [LocalSchemaTable]) throws -> String {
        String(decoding: try CanonicalJSON.encode(json(tables)), as: UTF8.self)
    }

    private static func table(_ table: LocalSchemaTable) -> JSONValue {
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
        if let composition = table.composition, !composition.isEmpty {
            members.append(JSONMember("composition", .string(composition)))
        }
        members.append(JSONMember("primaryKey", .array(table.primaryKey.map(JSONValue.string))))
        members.append(JSONMember("columns", .array(table.columns.map(column))))
        if !table.indexes.isEmpty {
            members.append(JSONMember("indexes", .array(table.indexes.map(index))))
        }
        return .object(JSONObject(members))
    }

    private static func column(_ column: LocalSchemaColumn) -> JSONValue {
        .object(JSONObject([
            JSONMember("fieldID", .string(column.fieldID)),
            JSONMember("name", .string(column.name)),
            JSONMember("logicalType", .string(column.logicalType.rawValue)),
            JSONMember("nullable", .bool(column.nullable)),
            JSONMember("writable", .bool(column.writable)),
            JSONMember("precision", column.precision.map { .number(JSONNumber(Int64($0))) } ?? .null),
            JSONMember("scale", column.scale.map { .number(JSONNumber(Int64($0))) } ?? .null),
            JSONMember("sqliteDefaultSQL", .null),
            JSONMember("isPrimaryKey", .bool(column.isPrimaryKey)),
        ]))
    }

    private static func index(_ index: LocalSchemaIndex) -> JSONValue {
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
}
