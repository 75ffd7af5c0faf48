import SQLiteKit
import SynchroStore

/// §6 item 3: internal tables exactly as §2.2 specifies them, synced tables exactly as the manifest declares them,
/// no other table, and exactly the three legacy capture triggers per synced table with the generator's text.
extension PublicationVerifier {
    mutating func checkSchema(_ connection: Connection) {
        collector.evaluated(.internalTableShape, .forbiddenWord, .internalIndex, .unexpectedTable)
        for table in SeedBaseline.tables {
            collector.guarding("reading the shape of \(table.name)", as: .sqliteError) {
                try checkInternalTable(table, connection)
            }
        }
        guard let manifest else {
            // Without a manifest the synced tables, their triggers and the table set cannot be checked; the
            // metadata checks report why.
            return
        }
        collector.evaluated(.syncedTableShape, .syncedTableIndex, .triggerMissing, .triggerSQL, .unexpectedTrigger)
        for table in manifest.localSchema {
            collector.guarding("reading the shape of \(table.tableName)", as: .sqliteError) {
                try checkSyncedTable(table, connection)
            }
        }
        collector.guarding("reading the table set", as: .sqliteError) {
            try checkTableSet(manifest, connection)
        }
        collector.guarding("reading the triggers", as: .sqliteError) {
            try checkTriggers(manifest, connection)
        }
    }

    // MARK: - Internal tables

    private func checkInternalTable(_ table: InternalTable, _ connection: Connection) throws {
        let sql = try connection.scalar(
            "SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = ?", [.text(table.name)])?.textValue
        guard let sql else {
            collector.add(.internalTableShape, table: table.name, "the internal table is missing")
            return
        }
        let physical = try connection.columns(of: table.name)
        if physical.count != table.columns.count {
            collector.add(.internalTableShape, table: table.name,
                          "\(physical.count) columns instead of \(table.columns.count)")
        }
        for (position, (info, column)) in zip(physical, table.columns).enumerated() {
            var differences: [String] = []
            if info.name != column.name { differences.append("name") }
            if info.declaredType != column.declaredType { differences.append("declared type") }
            if info.isNotNull != column.notNull { differences.append("NOT NULL") }
            if info.primaryKeyPosition != column.primaryKey { differences.append("primary-key ordinal") }
            if info.defaultSQL != column.defaultSQL { differences.append("default") }
            if !differences.isEmpty {
                collector.add(.internalTableShape, table: table.name,
                              "column \(position + 1) (\(column.name)) differs in "
                                  + differences.joined(separator: ", "))
            }
        }
        for word in Self.forbiddenWords(in: sql) {
            collector.add(.forbiddenWord, table: table.name, "the stored CREATE TABLE text contains \(word)")
        }
        try checkInternalIndexes(table, connection)
    }

    /// The forbidden words of §2.2 that occur as whole words (case-insensitively) in `sql`.
    static func forbiddenWords(in sql: String) -> [String] {
        var words: Set<String> = []
        var current = ""
        for scalar in sql.unicodeScalars {
            if scalar.properties.isAlphabetic || scalar == "_" || ("0"..."9").contains(scalar) {
                current.unicodeScalars.append(scalar)
            } else if !current.isEmpty {
                words.insert(current.uppercased())
                current = ""
            }
        }
        if !current.isEmpty { words.insert(current.uppercased()) }
        return SeedBaseline.forbiddenWords.filter(words.contains)
    }

    /// Exactly the primary-key autoindex (over the key columns in key order) and the named indexes of §2.2, with
    /// their exact SQL and columns.
    private func checkInternalIndexes(_ table: InternalTable, _ connection: Connection) throws {
        let indexes = try connection.query(
            "SELECT name, origin, \"unique\", partial FROM pragma_index_list(?)", [.text(table.name)]
        ) { (try $0.text(at: 0), try $0.text(at: 1)) }
        let keyColumns = table.columns.filter { $0.primaryKey > 0 }.sorted { $0.primaryKey < $1.primaryKey }
            .map(\.name)
        var autoindexes = 0
        for (name, origin) in indexes {
            let columns = try indexColumns(name, connection)
            if origin == "pk" {
                autoindexes += 1
                if columns != keyColumns {
                    collector.add(.internalIndex, table: table.name, "the primary-key index covers other columns")
                }
                continue
            }
            guard origin == "c", let expected = table.indexes.first(where: { $0.name == name }) else {
                collector.add(.internalIndex, table: table.name, "unexpected index \(name)")
                continue
            }
            let sql = try connection.scalar(
                "SELECT sql FROM sqlite_schema WHERE type = 'index' AND name = ?", [.text(name)])?.textValue
            if sql != expected.sql {
                collector.add(.internalIndex, table: table.name, "index \(name) has other SQL text")
            }
            if columns != expected.columns {
                collector.add(.internalIndex, table: table.name, "index \(name) covers other columns")
            }
        }
        if autoindexes != 1 {
            collector.add(.internalIndex, table: table.name, "\(autoindexes) primary-key indexes instead of 1")
        }
        for index in table.indexes where !indexes.contains(where: { $0.0 == index.name }) {
            collector.add(.internalIndex, table: table.name, "index \(index.name) is missing")
        }
    }

    private func indexColumns(_ index: String, _ connection: Connection) throws -> [String] {
        try connection.query("SELECT name FROM pragma_index_info(?) ORDER BY seqno", [.text(index)]) {
            (try? $0.value(at: 0))?.textValue ?? ""
        }
    }

    // MARK: - Synced tables

    private func checkSyncedTable(_ table: LocalSchemaTable, _ connection: Connection) throws {
        let physical = try connection.columns(of: table.tableName)
        guard !physical.isEmpty else {
            collector.add(.syncedTableShape, table: table.tableName, "the synced table is missing")
            return
        }
        if physical.count != table.columns.count {
            collector.add(.syncedTableShape, table: table.tableName,
                          "\(physical.count) columns instead of the manifest's \(table.columns.count)")
        }
        for (position, (info, column)) in zip(physical, table.columns).enumerated() {
            var differences: [String] = []
            if info.name != column.name { differences.append("name") }
            if info.declaredType != SyncedTableDDL.declaredType(column.logicalType) {
                differences.append("declared type")
            }
            if info.isNotNull != (!column.nullable && !column.isPrimaryKey) { differences.append("NOT NULL") }
            if info.primaryKeyPosition != (column.isPrimaryKey ? 1 : 0) { differences.append("primary key") }
            if info.defaultSQL != nil { differences.append("default") }
            if !differences.isEmpty {
                collector.add(.syncedTableShape, table: table.tableName,
                              "column \(position + 1) (\(column.name)) differs in "
                                  + differences.joined(separator: ", "))
            }
        }
        // The exporter creates no manifest index (§2.4); only a text key has an autoindex.
        let indexes = try connection.query(
            "SELECT name, origin FROM pragma_index_list(?)", [.text(table.tableName)]
        ) { (try $0.text(at: 0), try $0.text(at: 1)) }
        for (name, origin) in indexes where origin != "pk" {
            collector.add(.syncedTableIndex, table: table.tableName,
                          "index \(name): a seed's synced tables carry no index besides the primary key")
        }
    }

    /// The non-`sqlite_` tables and views are exactly the internal and synced tables.
    private func checkTableSet(_ manifest: ClientManifest, _ connection: Connection) throws {
        let expected = Set(SeedBaseline.tables.map(\.name) + manifest.localSchema.map(\.tableName))
        let present = try connection.query(
            "SELECT type, name FROM sqlite_schema WHERE type IN ('table', 'view') ORDER BY name"
        ) { (try $0.text(at: 0), try $0.text(at: 1)) }
        for (type, name) in present where !name.hasPrefix("sqlite_") && (type == "view" || !expected.contains(name)) {
            collector.add(.unexpectedTable, table: name, "a \(type) that is neither internal nor in the manifest")
        }
    }

    // MARK: - Triggers

    /// Exactly the three legacy triggers per synced table, on that table, with the generator's text (trimmed).
    private func checkTriggers(_ manifest: ClientManifest, _ connection: Connection) throws {
        var stored: [String: (table: String, sql: String)] = [:]
        try connection.forEachRow("SELECT name, tbl_name, sql FROM sqlite_schema WHERE type = 'trigger'") { row in
            stored[try row.text(at: 0)] = (try row.text(at: 1), (try? row.value(at: 2))?.textValue ?? "")
        }
        var expectedNames: Set<String> = []
        for table in manifest.localSchema {
            for (name, sql) in LegacyCaptureTriggers.statements(for: table) {
                expectedNames.insert(name)
                guard let trigger = stored[name] else {
                    collector.add(.triggerMissing, table: table.tableName, "trigger \(name) is missing")
                    continue
                }
                if trigger.table != table.tableName
                    || SeedSchemaGate.trimmedSQL(trigger.sql) != SeedSchemaGate.trimmedSQL(sql) {
                    collector.add(.triggerSQL, table: table.tableName,
                                  "trigger \(name) differs from the legacy capture trigger generator's text")
                }
            }
        }
        for (name, trigger) in stored.sorted(by: { $0.key < $1.key }) where !expectedNames.contains(name) {
            collector.add(.unexpectedTrigger, table: trigger.table, "trigger \(name) is not a seed capture trigger")
        }
    }
}
