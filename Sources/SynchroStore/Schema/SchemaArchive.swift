import SQLiteKit

/// `_synchro_schema_archive`: every schema ever activated, insert-or-ignore (`spec/client-store.md` §4.13).
/// The capture triggers require a row for the active reference.
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
}
