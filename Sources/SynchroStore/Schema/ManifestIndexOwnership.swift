import SQLiteKit
import SynchroProtocol

/// Which indexes belong to the manifests (issue #19): an index is created from a manifest only under a name no
/// other index holds, and dropped by a later manifest only when a manifest created it. `CREATE INDEX IF NOT EXISTS`
/// alone skipped an existing index of that name (the application's own, or one on another table), and dropping the
/// name with the next version then removed an index no manifest had made.
///
/// Ownership is recorded in `_synchro_meta` (``MetaKey/manifestIndexes``) as each index is created, and a physical
/// index counts as the manifest's only when it is recorded *and* is exactly the definition the manifest gives (its
/// table and `CREATE INDEX` text, as `sqlite_schema` stores it). A store without the record (written before it, or
/// installed from a seed) is judged by the definition alone: an index that is exactly what the manifest declares
/// can only have come from it, or is indistinguishable from it (`docs/decisions.md`, "Manifest index ownership").
package enum ManifestIndexOwnership {
    /// Creates `index` of `table`, or adopts an existing index of that name that is exactly it; records it as owned.
    /// Throws ``SchemaApplicationError/indexNameTaken(table:index:)`` before any DDL of its own when another index
    /// holds the name.
    package static func create(
        _ index: LocalSchemaIndex, on table: LocalSchemaTable, connection: Connection
    ) throws {
        guard let sql = SyncedTableDDL.createIndex(index, on: table) else { return }
        let recorded = try recorded(on: connection)
        if let existing = try physical(index.name, on: connection) {
            let wasOurs = recorded.map { $0.contains(index.name) } ?? true
            guard wasOurs, matches(existing, index, table) else {
                throw ClientStoreError.schemaApplication(.indexNameTaken(table: table.tableName, index: index.name))
            }
        } else {
            try connection.execute(sql)
        }
        try store((recorded ?? []).union([index.name]), on: connection)
    }

    /// Drops `index` of `table` (a manifest no longer declaring it) when the manifests own it; an index of that name
    /// that is not theirs is left alone. Returns whether it dropped one.
    @discardableResult
    package static func drop(_ index: LocalSchemaIndex, of table: LocalSchemaTable, connection: Connection) throws -> Bool {
        let recorded = try recorded(on: connection)
        var dropped = false
        if let existing = try physical(index.name, on: connection),
            recorded.map({ $0.contains(index.name) }) ?? true, matches(existing, index, table)
        {
            try connection.execute("DROP INDEX \(SQLiteIdentifier.quote(existing.name))")
            dropped = true
        }
        if var names = recorded, names.remove(index.name) != nil { try store(names, on: connection) }
        return dropped
    }

    /// The `CREATE INDEX` text SQLite stores for the manifest's `index` of `table` (without `IF NOT EXISTS`);
    /// nil when the index names a field the table does not have.
    package static func storedSQL(_ index: LocalSchemaIndex, on table: LocalSchemaTable) -> String? {
        SyncedTableDDL.createIndex(index, on: table)?
            .replacing("INDEX IF NOT EXISTS ", with: "INDEX ", maxReplacements: 1)
    }

    /// Whether an index of `index`'s name exists and is exactly the manifest's definition of it on `table`.
    package static func isExactly(
        _ index: LocalSchemaIndex, on table: LocalSchemaTable, connection: Connection
    ) throws -> Bool {
        guard let existing = try physical(index.name, on: connection) else { return false }
        return matches(existing, index, table)
    }

    /// Whether any index named `name` exists (SQLite compares names without ASCII case).
    package static func exists(_ name: String, on connection: Connection) throws -> Bool {
        try physical(name, on: connection) != nil
    }

    /// The recorded names; nil for a store without the record.
    package static func recorded(on connection: Connection) throws -> Set<String>? {
        guard let text = try MetaStore.value(.manifestIndexes, on: connection) else { return nil }
        guard let names = (try? StrictJSONParser().parse(Array(text.utf8)))?.arrayValue?.compactMap(\.stringValue)
        else { throw ClientStoreError.invalidLocalSchema(reason: "the manifest index record is not a JSON array") }
        return Set(names)
    }

    private static func store(_ names: Set<String>, on connection: Connection) throws {
        let text = try CanonicalJSON.string(.array(names.sorted().map(JSONValue.string)))
        try MetaStore.set(.manifestIndexes, text, on: connection)
    }

    private struct PhysicalIndex {
        let name: String
        let table: String
        let sql: String?
    }

    /// The index named `name` (SQLite compares names without ASCII case), if any.
    private static func physical(_ name: String, on connection: Connection) throws -> PhysicalIndex? {
        let rows = try connection.rows(
            "SELECT name, tbl_name, sql FROM sqlite_schema WHERE type = 'index' AND name = ? COLLATE NOCASE",
            [.text(name)])
        guard let row = rows.first, let found = row[0].textValue, let table = row[1].textValue else { return nil }
        return PhysicalIndex(name: found, table: table, sql: row[2].textValue)
    }

    /// Whether `existing` is exactly what the manifest's `index` of `table` creates: same table and the stored
    /// statement (SQLite stores it without `IF NOT EXISTS`).
    private static func matches(_ existing: PhysicalIndex, _ index: LocalSchemaIndex, _ table: LocalSchemaTable) -> Bool {
        guard let expected = storedSQL(index, on: table), let stored = existing.sql else { return false }
        return SQLName.normalized(existing.table) == SQLName.normalized(table.tableName) && stored == expected
            && existing.name == index.name
    }
}
