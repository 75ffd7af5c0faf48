import SQLiteKit
import SynchroProtocol

/// The manifest's non-unique indexes that an initial rebuild dropped to build once at its end (issue #21): a rebuild
/// page inserts its rows into such an index at random places, so every page transaction rewrote most of the index's
/// pages (33.6 GB written for 1,000,000 rows), while one `CREATE INDEX` over the filled table sorts once and writes
/// each page once (`docs/decisions.md`, "Initial rebuild: non-unique manifest indexes built once at finality").
///
/// The record (``MetaKey/deferredIndexes``) is written in the transaction that drops the indexes and removed in the
/// transaction that builds them again, so a committed state either has each index or names it: a reader sees an
/// index missing during the rebuild, never half built. Only indexes the manifests own (``ManifestIndexOwnership``)
/// and that are exactly the manifest's definition are dropped, and they are built again from the active manifest's
/// definition, never from text read back from the store; their ownership record is left as it is (the index stays
/// the manifest's while it is deferred). Unique indexes are never deferred: they decide per-row constraint errors.
package enum DeferredIndexes {
    /// One deferred index: its name, table and the `CREATE INDEX` text SQLite stored for it.
    package struct Entry: Sendable, Equatable {
        package let name: String
        package let table: String
        package let sql: String
    }

    /// Drops the non-unique manifest indexes of `tables` that the manifests own and that are exactly the manifest's
    /// definition, and records them, on `connection` inside the caller's transaction. Does nothing (and returns no
    /// entry) when a record already exists. Returns the recorded entries.
    @discardableResult
    package static func deferNonUnique(of tables: [LocalSchemaTable], on connection: Connection) throws -> [Entry] {
        guard try record(on: connection) == nil else { return [] }
        let owned = try ManifestIndexOwnership.recorded(on: connection)
        var entries: [Entry] = []
        for table in tables {
            for index in table.indexes where !index.unique && owned.map({ $0.contains(index.name) }) ?? true {
                guard let sql = ManifestIndexOwnership.storedSQL(index, on: table),
                    try ManifestIndexOwnership.isExactly(index, on: table, connection: connection)
                else { continue }
                entries.append(Entry(name: index.name, table: table.tableName, sql: sql))
            }
        }
        guard !entries.isEmpty else { return [] }
        entries.sort { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
        for entry in entries { try connection.execute("DROP INDEX \(SQLiteIdentifier.quote(entry.name))") }
        try MetaStore.set(.deferredIndexes, try encode(entries), on: connection)
        return entries
    }

    /// Builds every recorded index again from the definition `tables` (the active manifest's) give it and removes
    /// the record, on `connection` inside the caller's transaction. An entry the active schema no longer declares
    /// exactly (non-unique, same table and text) is not built, and an index that already exists is left as it is.
    /// Returns the names built.
    @discardableResult
    package static func restore(tables: [LocalSchemaTable], on connection: Connection) throws -> [String] {
        guard let entries = try record(on: connection) else { return [] }
        var built: [String] = []
        for entry in entries {
            guard let table = tables.first(where: { $0.tableName == entry.table }),
                let index = table.indexes.first(where: { $0.name == entry.name && !$0.unique }),
                let sql = ManifestIndexOwnership.storedSQL(index, on: table), sql == entry.sql,
                try !ManifestIndexOwnership.exists(entry.name, on: connection)
            else { continue }
            try connection.execute(sql)
            built.append(entry.name)
        }
        try MetaStore.remove(.deferredIndexes, on: connection)
        return built
    }

    /// The recorded entries; nil when nothing is deferred.
    package static func record(on connection: Connection) throws -> [Entry]? {
        guard let text = try MetaStore.value(.deferredIndexes, on: connection) else { return nil }
        guard let items = (try? StrictJSONParser().parse(Array(text.utf8)))?.arrayValue else {
            throw ClientStoreError.invalidLocalSchema(reason: "the deferred index record is not a JSON array")
        }
        return try items.map { item in
            guard let object = item.objectValue, let name = object["name"]?.stringValue,
                let table = object["table"]?.stringValue, let sql = object["sql"]?.stringValue
            else { throw ClientStoreError.invalidLocalSchema(reason: "a deferred index entry is malformed") }
            return Entry(name: name, table: table, sql: sql)
        }
    }

    private static func encode(_ entries: [Entry]) throws -> String {
        try CanonicalJSON.string(.array(entries.map { entry in
            .object(JSONObject([
                JSONMember("name", .string(entry.name)), JSONMember("sql", .string(entry.sql)),
                JSONMember("table", .string(entry.table)),
            ]))
        }))
    }
}
