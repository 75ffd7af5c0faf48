import SQLiteKit
import SynchroProtocol

/// `_synchro_schema_archive`: every schema ever activated, insert-or-ignore (`spec/client-store.md` §4.13).
/// The capture triggers require a row for the active reference; push reconciliation reads an earlier row to verify
/// an outcome that names its schema (client contract §7.1: the immutable manifests unresolved batches need).
package enum SchemaArchive {
    package static func archive(
        version: Int64, hash: String, tables: [LocalSchemaTable], createdAt: String, on connection: Connection
    ) throws(ClientStoreError) {
        let json = try LocalSchemaJSON.encode(tables)
        do {
            try connection.run(
                "INSERT OR IGNORE INTO _synchro_schema_archive (schema_version, schema_hash, schema_json, created_at) "
                    + "VALUES (?, ?, ?, ?)",
                [.integer(version), .text(hash), .text(json), .text(createdAt)])
        } catch {
            throw .sqlite(error)
        }
    }

    /// The archived tables of `reference`, or nil when the store never activated that schema.
    package static func tables(
        of reference: SchemaReference, on connection: Connection
    ) throws(ClientStoreError) -> [LocalSchemaTable]? {
        let json: SQLiteValue?
        do {
            json = try connection.scalar(
                "SELECT schema_json FROM _synchro_schema_archive WHERE schema_version = ? AND schema_hash = ?",
                [.integer(reference.version), .text(reference.hash)])
        } catch {
            throw .sqlite(error)
        }
        guard let text = json?.textValue else { return nil }
        return try LocalSchemaJSON.decode(text)
    }

    /// The archived schema `reference` as a manifest that digests rows exactly as that schema did
    /// (``SchemaManifest/init(archived:tables:)``), or nil when the store never activated it.
    package static func manifest(
        of reference: SchemaReference, on connection: Connection
    ) throws(ClientStoreError) -> SchemaManifest? {
        guard let tables = try tables(of: reference, on: connection) else { return nil }
        do {
            return try SchemaManifest(archived: reference, tables: tables.map(manifestTable))
        } catch {
            throw .invalidLocalSchema(reason: "archived schema \(reference.version): \(error)")
        }
    }

    /// The manifest spelling of an archived table: the members a row digest and its value checks read.
    private static func manifestTable(_ table: LocalSchemaTable) -> JSONValue {
        func optional(_ text: String?) -> JSONValue { text.map(JSONValue.string) ?? .null }
        let fields = table.columns.map { column -> JSONValue in
            var members = [
                JSONMember("field_id", .string(column.fieldID)), JSONMember("name", .string(column.name)),
                JSONMember("type", .string(column.logicalType.rawValue)),
                JSONMember("nullable", .bool(column.nullable)), JSONMember("writable", .bool(column.writable)),
            ]
            if let precision = column.precision {
                members.append(JSONMember("precision", .number(JSONNumber(Int64(precision)))))
            }
            if let scale = column.scale { members.append(JSONMember("scale", .number(JSONNumber(Int64(scale))))) }
            return .object(JSONObject(members))
        }
        return .object(JSONObject([
            JSONMember("table_id", .string(table.tableID)), JSONMember("relation_id", .string(table.relationID)),
            JSONMember("name", .string(table.tableName)),
            JSONMember("composition", .string(table.composition ?? "single_scope")),
            JSONMember("primary_key_field_id", .string(table.primaryKeyFieldID)),
            JSONMember("lifecycle", .object(JSONObject([
                JSONMember("created_at_field_id", optional(table.createdAtFieldID)),
                JSONMember("updated_at_field_id", optional(table.updatedAtFieldID)),
                JSONMember("deleted_at_field_id", optional(table.deletedAtFieldID)),
            ]))),
            JSONMember("fields", .array(fields)), JSONMember("indexes", .array([])),
        ]))
    }
}
