import SQLiteKit

/// The one table change SQLite cannot make in place: dropping `NOT NULL` from existing columns
/// (`spec/client-store.md` §5.3, "Relaxing NOT NULL rebuilds the table"; plan kind `relax_nullability`).
///
/// The table is recreated under `_synchro_migration_<tableID>` with the columns `PRAGMA table_info` reports —
/// same names, declared types, key, defaults and order, `NOT NULL` kept everywhere except on the relaxed columns —
/// every row is copied with its rowid, the old table is dropped, the copy renamed in legacy mode, and the indexes
/// and triggers the old table had are created again from their stored SQL. Reproducing the physical columns rather
/// than regenerating them from a manifest keeps what earlier compatible migrations appended (a column added by
/// `add_column` is nullable and last, whatever the manifest says), so the rebuild changes exactly the relaxed
/// columns. Synced tables are never declared `AUTOINCREMENT`, so there is no `sqlite_sequence` entry to restore.
///
/// Runs inside the caller's schema-migration transaction: foreign keys off (dropping the table must not run
/// foreign-key actions) and capture suppressed (the copy is not application intent).
package enum SyncedTableRebuild {
    /// Rebuilds `table` with `NOT NULL` dropped from the columns named in `relaxing`.
    package static func relaxNullability(
        table: String, tableID: String, relaxing: [String], on connection: Connection
    ) throws(SQLiteError) {
        let physical = try connection.columns(of: table)
        let relaxed = Set(relaxing.map(SQLName.normalized))
        let staging = "_synchro_migration_\(tableID)"
        // Index and trigger SQL of the table, in creation order; automatic indexes have no SQL and come back with
        // the key.
        let dependents = try connection.rows("""
            SELECT sql FROM main.sqlite_schema
            WHERE tbl_name = ?1 COLLATE NOCASE AND type IN ('index', 'trigger') AND sql IS NOT NULL ORDER BY rowid
            """, [.text(table)]).compactMap { $0.first?.textValue }
        let columns = physical.map { SQLiteIdentifier.quote($0.name) }.joined(separator: ", ")
        try connection.execute("DROP TABLE IF EXISTS \(SQLiteIdentifier.quote(staging))")
        try connection.execute(createTable(named: staging, like: physical, relaxing: relaxed))
        try connection.execute("""
            INSERT INTO \(SQLiteIdentifier.quote(staging)) (rowid, \(columns))
                SELECT rowid, \(columns) FROM \(SQLiteIdentifier.quote(table))
            """)
        try connection.execute("DROP TABLE \(SQLiteIdentifier.quote(table))")
        // Legacy mode: a modern RENAME re-checks every view and trigger of the schema, and one that names the
        // dropped table (an application view, say) would fail it until the renamed copy exists.
        try connection.execute("PRAGMA legacy_alter_table = ON")
        defer { try? connection.execute("PRAGMA legacy_alter_table = OFF") }
        try connection.execute(
            "ALTER TABLE \(SQLiteIdentifier.quote(staging)) RENAME TO \(SQLiteIdentifier.quote(table))")
        for sql in dependents {
            try connection.execute(sql)
        }
    }

    /// `CREATE TABLE "<name>" (...)` with `physical`'s columns, `NOT NULL` dropped from the `relaxed` ones
    /// (normalized names); a single key column keeps its inline `PRIMARY KEY` (an `INTEGER` key stays the rowid).
    package static func createTable(
        named name: String, like physical: [Connection.ColumnInfo], relaxing relaxed: Set<String>
    ) -> String {
        let keys = physical.filter(\.isPrimaryKey).sorted { $0.primaryKeyPosition < $1.primaryKeyPosition }
        var definitions = physical.map { column in
            var definition = SQLiteIdentifier.quote(column.name)
            if !column.declaredType.isEmpty {
                definition += " \(column.declaredType)"
            }
            if keys.count == 1 && column.isPrimaryKey {
                definition += " PRIMARY KEY"
            }
            if column.isNotNull && !relaxed.contains(SQLName.normalized(column.name)) {
                definition += " NOT NULL"
            }
            if let defaultSQL = column.defaultSQL {
                definition += " DEFAULT \(defaultSQL)"
            }
            return definition
        }
        if keys.count > 1 {
            definitions.append("PRIMARY KEY (\(keys.map { SQLiteIdentifier.quote($0.name) }.joined(separator: ", ")))")
        }
        return "CREATE TABLE \(SQLiteIdentifier.quote(name)) (\(definitions.joined(separator: ", ")))"
    }
}
