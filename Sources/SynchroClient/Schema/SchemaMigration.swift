import SQLiteKit
import SynchroProtocol

/// The additive DDL of a compatible schema action (`replace` over an installed schema or `rebuild_local`,
/// `spec/wire-protocol.md` §12.2, §12.4; `spec/client-store.md` §4.13 plan kinds `create_table`, `create_index`,
/// `add_column`).
///
/// The server decides compatibility; the client only refuses what it cannot apply additively (a removed synced
/// table, a new non-nullable column, a changed column type or key, a tightened nullability), so a contract
/// breach never silently reshapes local data. Local-only tables are never touched.
enum SchemaMigration {
    /// Applies the DDL that takes the physical synced tables from `source` to `target`, inside the caller's
    /// schema-migration transaction. Target tables are handled in bytewise table-ID order (§4.13).
    static func applyAdditiveDDL(
        from source: [LocalSchemaTable], to target: [LocalSchemaTable], on connection: Connection
    ) throws {
        let targetIDs = Set(target.map(\.tableID))
        if let removed = source.first(where: { !targetIDs.contains($0.tableID) }) {
            throw ClientStoreError.schemaApplication(.tableConflict(removed.tableName))
        }
        let ordered = target.sorted { $0.tableID.utf8.lexicographicallyPrecedes($1.tableID.utf8) }
        for table in ordered {
            let previous = source.first { $0.tableID == table.tableID }
            if let previous, SQLName.normalized(previous.tableName) != SQLName.normalized(table.tableName) {
                throw ClientStoreError.schemaApplication(.tableConflict(table.tableName))
            }
            let existing = try connection.columns(of: table.tableName)
            if existing.isEmpty {
                // A new table (Class 2 empty table, or a Class 3 table whose rows arrive by rebuild).
                try connection.execute(SyncedTableDDL.createTable(table))
            } else if previous == nil {
                // A local-only table already owns the name: never altered or adopted.
                throw ClientStoreError.schemaApplication(.tableConflict(table.tableName))
            } else {
                try addColumns(table, existing: existing, on: connection)
            }
            if let previous {
                try dropRemovedIndexes(previous, target: table, on: connection)
            }
            for index in table.indexes {
                if let sql = SyncedTableDDL.createIndex(index, on: table) {
                    try connection.execute(sql)
                }
            }
        }
    }

    /// `add_column` for every target column the physical table lacks; existing columns must keep their layout.
    private static func addColumns(
        _ table: LocalSchemaTable, existing: [Connection.ColumnInfo], on connection: Connection
    ) throws {
        let physical = Dictionary(existing.map { (SQLName.normalized($0.name), $0) }) { first, _ in first }
        for column in table.columns {
            if let info = physical[SQLName.normalized(column.name)] {
                // Relaxing NOT NULL would need a table rebuild in SQLite; it is refused rather than faked.
                guard info.declaredType == SyncedTableDDL.declaredType(column.logicalType),
                      info.isPrimaryKey == column.isPrimaryKey,
                      info.isNotNull == (!column.nullable && !column.isPrimaryKey)
                else { throw ClientStoreError.schemaApplication(.tableConflict(table.tableName)) }
                continue
            }
            // SQLite can only append nullable (or defaulted) columns without rewriting the table.
            guard column.nullable, !column.isPrimaryKey else {
                throw ClientStoreError.schemaApplication(.tableConflict(table.tableName))
            }
            var definition = "\(SQLiteIdentifier.quote(column.name)) \(SyncedTableDDL.declaredType(column.logicalType))"
            if let defaultSQL = column.sqliteDefaultSQL, !defaultSQL.isEmpty {
                definition += " DEFAULT \(defaultSQL)"
            }
            try connection.execute("ALTER TABLE \(SQLiteIdentifier.quote(table.tableName)) ADD COLUMN \(definition)")
        }
        let targetNames = Set(table.columns.map { SQLName.normalized($0.name) })
        guard physical.keys.allSatisfy(targetNames.contains) else {
            throw ClientStoreError.schemaApplication(.tableConflict(table.tableName))
        }
    }

    /// Drops the Synchro-owned indexes of `previous` that the target no longer declares (by index ID or name).
    private static func dropRemovedIndexes(
        _ previous: LocalSchemaTable, target: LocalSchemaTable, on connection: Connection
    ) throws {
        for index in previous.indexes where !target.indexes.contains(where: {
            $0.indexID == index.indexID && $0.name == index.name && $0.fieldIDs == index.fieldIDs
                && $0.unique == index.unique
        }) {
            try connection.execute("DROP INDEX IF EXISTS \(SQLiteIdentifier.quote(index.name))")
        }
    }
}
