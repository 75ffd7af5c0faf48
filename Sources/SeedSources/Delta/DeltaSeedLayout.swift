import SQLiteKit
import SynchroProtocol

/// The warm-start database of a delta export (docs/delta-sources.md, "Seed layout"; docs/decisions.md): one table
/// per entity type, named and typed by the definition, plus three bookkeeping tables an app and `verify` read.
///
/// - `_delta_seed(key, value)`: `format` = `seedkit-delta-seed/1`.
/// - `_delta_entities(entity, table_name, primary_key, columns, paging)`: what each table holds; `columns` is
///   the RFC 8785 array of `{name, nullable, type}`, so the seed is checkable without its definition.
/// - `_delta_checkpoints(entity, cursor, server_time, row_count, digest, pages, resets)`: where an app resumes
///   (`since = cursor`), written in the same transaction as the page it follows; `row_count` and `digest` are set
///   when the entity type is complete (a count per page would rescan the table: quadratic in the pages).
///
/// Nothing of the definition's credentials or headers is stored.
enum DeltaSeedLayout {
    static let format = "seedkit-delta-seed/1"

    /// Creates the bookkeeping tables and one table per entity type in an empty database.
    static func create(_ connection: Connection, definition: DeltaSourceDefinition) throws(SQLiteError) {
        try connection.execute("""
            CREATE TABLE _delta_seed (key TEXT NOT NULL PRIMARY KEY, value TEXT NOT NULL);
            CREATE TABLE _delta_entities (entity TEXT NOT NULL PRIMARY KEY, table_name TEXT NOT NULL UNIQUE,
                primary_key TEXT NOT NULL, columns TEXT NOT NULL, paging TEXT NOT NULL);
            CREATE TABLE _delta_checkpoints (entity TEXT NOT NULL PRIMARY KEY REFERENCES _delta_entities(entity),
                cursor TEXT NOT NULL, server_time TEXT, row_count INTEGER NOT NULL, digest TEXT,
                pages INTEGER NOT NULL, resets INTEGER NOT NULL);
            """)
        try connection.run("INSERT INTO _delta_seed (key, value) VALUES ('format', ?)", [.text(format)])
        for entity in definition.entities {
            let columns = entity.columns.map { column in
                SQLiteIdentifier.quote(column.name) + " " + DeltaColumnCodec.sqlType(column.type)
                    + (column.nullable ? "" : " NOT NULL") + (column.name == entity.primaryKey ? " PRIMARY KEY" : "")
            }
            try connection.execute(
                "CREATE TABLE \(SQLiteIdentifier.quote(entity.table)) (\(columns.joined(separator: ", ")))")
            let paging = if case .changes = entity.paging { "changes" } else { "list" }
            try connection.run(
                "INSERT INTO _delta_entities VALUES (?, ?, ?, ?, ?)",
                [.text(entity.name), .text(entity.table), .text(entity.primaryKey),
                 .text(columnsText(entity.columns)), .text(paging)])
        }
    }

    /// The RFC 8785 text of a column list, as stored in `_delta_entities.columns`.
    static func columnsText(_ columns: [DeltaSourceDefinition.Column]) -> String {
        let array = JSONValue.array(columns.map { column in
            .object(JSONObject([
                JSONMember("name", .string(column.name)), JSONMember("nullable", .bool(column.nullable)),
                JSONMember("type", .string(column.type.rawValue)),
            ]))
        })
        return (try? CanonicalJSON.string(array)) ?? "[]"
    }

    /// The columns a stored `columns` text declares, nil when it is not a valid list.
    static func columns(parsing text: String) -> [DeltaSourceDefinition.Column]? {
        guard let array = (try? StrictJSONParser().parse(text))?.arrayValue, !array.isEmpty else { return nil }
        var columns: [DeltaSourceDefinition.Column] = []
        for item in array {
            guard let object = item.objectValue, object.count == 3, let name = object["name"]?.stringValue,
                  let nullable = object["nullable"]?.boolValue,
                  let type = object["type"]?.stringValue.flatMap({ PortableType(wireName: $0) })
            else { return nil }
            columns.append(.init(name: name, type: type, nullable: nullable))
        }
        return columns
    }

    /// Recomputes `entity`'s digest and row count from its stored rows and records both in its checkpoint (an
    /// export's last step per entity type, and a warm's).
    static func seal(
        _ connection: Connection, entity: DeltaSourceDefinition.Entity
    ) throws(DeltaSourceError) -> (hex: String, rows: Int64) {
        let digest: (hex: String, rows: Int64)?
        do {
            digest = try Self.digest(connection, table: entity.table, key: entity.primaryKey, columns: entity.columns)
            if let digest {
                try connection.run(
                    "UPDATE _delta_checkpoints SET digest = ?, row_count = ? WHERE entity = ?",
                    [.text(digest.hex), .integer(digest.rows), .text(entity.name)])
            }
        } catch {
            throw .output(.storage("\(error)"))
        }
        guard let digest else { throw .verification(checks: ["value_type:\(entity.name)"]) }
        return digest
    }

    /// The digest of one table and its row count: SHA-256 over, in primary-key order, each row's RFC 8785 array of
    /// its column values (declared order, the JSON each stored value stands for) followed by a line feed; nil when
    /// a stored value does not fit its column.
    static func digest(
        _ connection: Connection, table: String, key: String, columns: [DeltaSourceDefinition.Column]
    ) throws(SQLiteError) -> (hex: String, rows: Int64)? {
        let list = columns.map { SQLiteIdentifier.quote($0.name) }.joined(separator: ", ")
        let statement = try connection.prepare(
            "SELECT \(list) FROM \(SQLiteIdentifier.quote(table)) ORDER BY \(SQLiteIdentifier.quote(key))")
        var hash = SHA256()
        var rows: Int64 = 0
        var line: [UInt8] = []
        var fits = true
        do {
            try statement.forEachRow { row in
                line.removeAll(keepingCapacity: true)
                line.append(0x5B)  // [
                for (index, column) in columns.enumerated() {
                    if index > 0 { line.append(0x2C) }  // ,
                    guard try DeltaColumnCodec.appendCanonical(row, at: index, column: column, to: &line) else {
                        fits = false
                        return
                    }
                }
                line.append(0x5D)  // ]
                line.append(0x0A)
                hash.update(line)
                rows += 1
            }
        } catch let error as SQLiteError {
            throw error
        } catch {
            return nil
        }
        guard fits else { return nil }
        return (Hex.encode(hash.finalize()), rows)
    }

    /// Every check `verify` and the export apply to a delta seed: the format, the bookkeeping tables, each entity
    /// table's columns as declared, a checkpoint per entity whose row count and digest match the table recomputed,
    /// no other table, and SQLite's integrity check. Returns the failed checks (empty: the seed is sound).
    static func verify(path: String) -> [String] {
        let connection: Connection
        do {
            connection = try Connection(path: path, mode: .readOnly)
        } catch {
            return ["unreadable_database"]
        }
        defer { connection.close() }
        do {
            return try checks(connection)
        } catch {
            return ["unreadable_database"]
        }
    }

    private static func checks(_ connection: Connection) throws(SQLiteError) -> [String] {
        guard try connection.integrityCheck() == ["ok"] else { return ["integrity_check"] }
        for table in ["_delta_seed", "_delta_entities", "_delta_checkpoints"] {
            guard try connection.tableExists(table) else { return ["missing_\(table)"] }
        }
        guard try connection.scalar("SELECT value FROM _delta_seed WHERE key = 'format'")?.textValue == format else {
            return ["unsupported_format"]
        }
        var failures: [String] = []
        var tables: Set<String> = ["_delta_seed", "_delta_entities", "_delta_checkpoints"]
        let entities = try connection.rows(
            "SELECT e.entity, e.table_name, e.primary_key, e.columns, c.row_count, c.digest "
                + "FROM _delta_entities e LEFT JOIN _delta_checkpoints c USING (entity) ORDER BY e.entity")
        guard !entities.isEmpty else { return ["no_entities"] }
        for row in entities {
            guard let name = row[0].textValue, let table = row[1].textValue, let key = row[2].textValue,
                  let columns = row[3].textValue.flatMap(columns(parsing:))
            else { failures.append("entity_declaration"); continue }
            tables.insert(table.lowercased())
            guard let count = row[4].integerValue, let digest = row[5].textValue else {
                failures.append("missing_checkpoint:\(name)")
                continue
            }
            let declared = try connection.columns(of: table).map(\.name)
            guard declared == columns.map(\.name), columns.contains(where: { $0.name == key }) else {
                failures.append("table_layout:\(name)")
                continue
            }
            guard let actual = try Self.digest(connection, table: table, key: key, columns: columns) else {
                failures.append("value_type:\(name)")
                continue
            }
            if actual.rows != count { failures.append("row_count:\(name)") }
            if actual.hex != digest { failures.append("digest:\(name)") }
        }
        let present = try connection.rows("SELECT name FROM sqlite_schema WHERE type = 'table'")
        for row in present {
            guard let name = row[0].textValue?.lowercased(), !name.hasPrefix("sqlite_") else { continue }
            if !tables.contains(name) { failures.append("undeclared_table") }
        }
        return failures
    }
}
