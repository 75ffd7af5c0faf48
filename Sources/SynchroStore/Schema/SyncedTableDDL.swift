import SQLiteKit
import SynchroProtocol

/// DDL of synced tables and their indexes (`spec/client-store.md` §5.2, §5.3).
package enum SyncedTableDDL {
    /// The declared SQLite type of each portable type (§5.2).
    package static func declaredType(_ type: PortableType) -> String {
        switch type {
        case .string, .decimal, .datetime, .date, .time, .json: "TEXT"
        case .int, .int64, .boolean: "INTEGER"
        case .float: "REAL"
        case .bytes: "BLOB"
        }
    }

    /// `CREATE TABLE IF NOT EXISTS "<name>" (<column defs>)`: columns in manifest order, ` PRIMARY KEY` on the key,
    /// ` NOT NULL` on non-nullable non-key columns, a default only when one is given; no table constraints.
    package static func createTable(_ table: LocalSchemaTable) -> String {
        let definitions = table.columns.map { column in
            var definition = "\(SQLiteIdentifier.quote(column.name)) \(declaredType(column.logicalType))"
            if column.isPrimaryKey {
                definition += " PRIMARY KEY"
            }
            if !column.nullable && !column.isPrimaryKey {
                definition += " NOT NULL"
            }
            if let defaultSQL = column.sqliteDefaultSQL, !defaultSQL.isEmpty {
                definition += " DEFAULT \(defaultSQL)"
            }
            return definition
        }
        return "CREATE TABLE IF NOT EXISTS \(SQLiteIdentifier.quote(table.tableName)) "
            + "(\(definitions.joined(separator: ", ")))"
    }

    /// `CREATE [UNIQUE ]INDEX IF NOT EXISTS "<index>" ON "<table>" ("<col>", …)`, columns resolved from field
    /// IDs in index order; nil when an index names a field the table lacks.
    package static func createIndex(_ index: LocalSchemaIndex, on table: LocalSchemaTable) -> String? {
        var columns: [String] = []
        for fieldID in index.fieldIDs {
            guard let column = table.column(fieldID: fieldID) else { return nil }
            columns.append(SQLiteIdentifier.quote(column.name))
        }
        let uniqueness = index.unique ? "UNIQUE " : ""
        return "CREATE \(uniqueness)INDEX IF NOT EXISTS \(SQLiteIdentifier.quote(index.name)) ON "
            + "\(SQLiteIdentifier.quote(table.tableName)) (\(columns.joined(separator: ", ")))"
    }

    /// Whether the physical table matches what `createTable` declares (`PRAGMA table_info`: exact type string,
    /// `notnull` only on non-nullable non-key columns, `pk` only on the key, no default unless declared).
    package static func matches(_ physical: [Connection.ColumnInfo], _ table: LocalSchemaTable) -> Bool {
        guard physical.count == table.columns.count else { return false }
        for (info, column) in zip(physical, table.columns) {
            let expectedDefault = column.sqliteDefaultSQL.flatMap { $0.isEmpty ? nil : $0 }
            guard SQLName.normalized(info.name) == SQLName.normalized(column.name),
                  info.declaredType == declaredType(column.logicalType),
                  info.isNotNull == (!column.nullable && !column.isPrimaryKey),
                  info.isPrimaryKey == column.isPrimaryKey,
                  info.defaultSQL == expectedDefault
            else { return false }
        }
        return true
    }
}
