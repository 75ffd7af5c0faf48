import SQLiteKit

/// Public wrappers over the client's own layout knowledge for the device-style seed installer in SeedArtifacts
/// (`spec/seed-format.md` §7.1), which validates a migrated seed with a plain read connection and must compare it
/// with exactly what this client would have written.
package enum SeedInstallSupport {
    /// Decodes a `local_schema` meta value or an archive `schema_json` the way the client reads it.
    package static func decodeLocalSchema(_ text: String) throws(ClientStoreError) -> [LocalSchemaTable] {
        try LocalSchemaJSON.decode(text)
    }

    /// The current capture triggers of `table` as `(name, CREATE TRIGGER statement)`, insert, update, delete.
    package static func captureTriggers(for table: LocalSchemaTable) -> [(name: String, sql: String)] {
        let creates = CaptureTriggerSQL(table: table).statements().filter { $0.hasPrefix("CREATE TRIGGER") }
        return Array(zip(CaptureTriggerSQL.names(forTable: table.tableName), creates))
    }

    /// Whether `PRAGMA table_info` of a synced table matches what the client declares for `table` (name, type,
    /// NOT NULL, primary key, default, position by position).
    package static func syncedTableMatches(_ physical: [Connection.ColumnInfo], _ table: LocalSchemaTable) -> Bool {
        SyncedTableDDL.matches(physical, table)
    }
}
