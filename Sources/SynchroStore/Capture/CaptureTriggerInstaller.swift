import SQLiteKit

/// Installs and regenerates capture triggers from the stored local schema (`spec/client-store.md` §2, §6).
package enum CaptureTriggerInstaller {
    /// Drops and recreates the three triggers of each table — except a table whose triggers already are exactly
    /// those three with the text they would be created with, where that would write the same schema rows again. A
    /// seed's migration installs the same triggers in v9, v14, v16, v17 and both v18 steps; parsing and writing them
    /// five more times was most of its in-memory migration once v13 kept the edges (`docs/decisions.md`).
    package static func install(_ tables: [LocalSchemaTable], on connection: Connection) throws(SQLiteError) {
        for table in tables {
            let statements = CaptureTriggerSQL(table: table).statements()
            if try isInstalled(statements, table: table.tableName, on: connection) { continue }
            for statement in statements {
                try connection.execute(statement)
            }
        }
    }

    /// Whether the triggers on `table`, and those named like its capture triggers, are exactly its three capture
    /// triggers in creation order (so no other trigger's firing order depends on when they were created), each stored
    /// with the text of its `CREATE TRIGGER` statement in `statements`, in the main schema and none in `temp`.
    private static func isInstalled(
        _ statements: [String], table: String, on connection: Connection
    ) throws(SQLiteError) -> Bool {
        let names = CaptureTriggerSQL.names(forTable: table)
        let creates = statements.filter { $0.hasPrefix("CREATE TRIGGER ") }
        guard names.count == 3, creates.count == 3 else { return false }
        let expected = zip(names, creates).map { name, sql -> [SQLiteValue] in [.text(name), .text(table), .text(sql)] }
        let arguments = [SQLiteValue.text(table)] + names.map(SQLiteValue.text)
        let filter = "type = 'trigger' AND (tbl_name = ?1 OR name IN (?2, ?3, ?4))"
        let stored = try connection.rows(
            "SELECT name, tbl_name, sql FROM main.sqlite_schema WHERE \(filter) ORDER BY rowid", arguments)
        guard stored == expected else { return false }
        return try connection.scalar("SELECT count(*) FROM temp.sqlite_schema WHERE \(filter)", arguments) == 0
    }

    /// "Regenerate capture triggers": nothing when `local_schema` is missing or empty; otherwise the schema
    /// reference must be real (`schema_version` > 0 and a `schema_hash`), else the open fails.
    package static func regenerate(on connection: Connection) throws(ClientStoreError) {
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
    package static func verifiedStoredSchema(
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
