import SQLiteKit

/// Installs and regenerates capture triggers from the stored local schema (`spec/client-store.md` §2, §6).
enum CaptureTriggerInstaller {
    /// Drops and recreates the three triggers of each table.
    static func install(_ tables: [LocalSchemaTable], on connection: Connection) throws(SQLiteError) {
        for table in tables {
            for statement in CaptureTriggerSQL(table: table).statements() {
                try connection.execute(statement)
            }
        }
    }

    /// "Regenerate capture triggers": nothing when `local_schema` is missing or empty; otherwise the schema
    /// reference must be real (`schema_version` > 0 and a `schema_hash`), else the open fails.
    static func regenerate(on connection: Connection) throws(ClientStoreError) {
        let tables: [LocalSchemaTable]
        do {
            guard let encoded = try MetaStore.value(.localSchema, on: connection) else { return }
            tables = try LocalSchemaJSON.decode(encoded)
            guard !tables.isEmpty else { return }
            let hash = try MetaStore.value(.schemaHash, on: connection) ?? ""
            guard try MetaStore.integer(.schemaVersion, on: connection) > 0, !hash.isEmpty else {
                throw ClientStoreError.captureUpgradeRequiresVerifiedSchema
            }
            try install(tables, on: connection)
        } catch let error as ClientStoreError {
            throw error
        } catch let error as SQLiteError {
            throw .sqlite(error)
        } catch {
            throw .sqlite(SQLiteError(reason: .sqlite, code: .error, message: "\(error)"))
        }
    }

    /// The verified stored schema for the steps that install triggers only when everything is in place
    /// (v9, v14): nil when the reference is not real or `local_schema` does not decode.
    static func verifiedStoredSchema(
        on connection: Connection
    ) throws(SQLiteError) -> (version: Int64, hash: String, tables: [LocalSchemaTable])? {
        let version = try MetaStore.integer(.schemaVersion, on: connection)
        guard version > 0, let hash = try MetaStore.value(.schemaHash, on: connection), !hash.isEmpty,
              let encoded = try MetaStore.value(.localSchema, on: connection),
              let tables = try? LocalSchemaJSON.decode(encoded)
        else { return nil }
        return (version, hash, tables)
    }
}
