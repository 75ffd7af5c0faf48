import SQLiteKit

/// Whether `_synchro_scope_rows` already is, in every observable way, the table v13's rebuild produces (its
/// columns, constraints, indexes and TEXT checksums), so that v13 can keep it instead of copying every edge into an
/// identical table (`docs/decisions.md`, "v13 keeps a scope-row table that already has its shape"). A seed's table
/// has that shape; an older layout, a BLOB checksum or any other definition does not, and takes the full rebuild.
enum ScopeRowsV13Shape {
    static let table = "_synchro_scope_rows"
    static let recordIndex = "idx_synchro_scope_rows_record"

    /// `pragma_table_xinfo` of v13's table: name, declared type, NOT NULL, default, primary-key ordinal, hidden.
    static let columns: [[SQLiteValue]] = [
        ["scope_id", "TEXT", 1, .null, 1, 0],
        ["table_name", "TEXT", 1, .null, 2, 0],
        ["record_id", "TEXT", 1, .null, 3, 0],
        ["checksum", "TEXT", 1, .null, 0, 0],
        ["generation", "INTEGER", 1, "0", 0, 0],
    ]

    /// The key columns of the primary key's index and of the record index, ascending with the binary collation.
    static let primaryKeyColumns = ["scope_id", "table_name", "record_id"]
    static let recordIndexColumns = ["table_name", "record_id"]

    /// Every word (case-insensitive) that v13's `CREATE TABLE` can be written with. The pragmas do not show a
    /// `COLLATE`, `CHECK`, `ON CONFLICT`, `REFERENCES` or `UNIQUE` clause; a statement with any other word
    /// (those, a constraint name, a comment) is not taken for v13's.
    static let words: Set<String> = [
        "CREATE", "TABLE", "IF", "NOT", "EXISTS", "MAIN", "_SYNCHRO_SCOPE_ROWS", "SCOPE_ID", "TABLE_NAME",
        "RECORD_ID", "CHECKSUM", "GENERATION", "TEXT", "INTEGER", "NULL", "DEFAULT", "0", "PRIMARY", "KEY",
    ]

    /// What v13 has to do with the table.
    enum Verdict: Equatable {
        /// Copy it (the upstream rebuild).
        case rebuild
        /// Keep it as it is; create the record index if `createIndex`.
        case keep(createIndex: Bool)
    }

    static func verdict(on db: Connection) throws(SQLiteError) -> Verdict {
        guard try hasDefinition(db), try hasNoTriggers(db), let indexed = try recordIndexState(db),
              try allRowsCopyUnchanged(db)
        else { return .rebuild }
        return .keep(createIndex: !indexed)
    }

    /// A non-STRICT rowid table with exactly v13's columns, written with v13's words only.
    private static func hasDefinition(_ db: Connection) throws(SQLiteError) -> Bool {
        let shape = try db.rows(
            "SELECT type, ncol, wr, strict FROM pragma_table_list(?1) WHERE schema = 'main'", [.text(table)])
        guard shape == [["table", 5, 0, 0]] else { return false }
        let declared = try db.rows("""
            SELECT name, type, "notnull", dflt_value, pk, hidden FROM pragma_table_xinfo(?1, 'main') ORDER BY cid
            """, [.text(table)])
        guard declared == columns,
              let sql = try db.scalar(
                  "SELECT sql FROM main.sqlite_schema WHERE type = 'table' AND name = ?1", [.text(table)])?.textValue
        else { return false }
        return uppercasedWords(of: sql).isSubset(of: words)
    }

    /// The words of `sql`: runs of ASCII letters, digits, underscores and non-ASCII octets, uppercased; quotes,
    /// punctuation and whitespace separate them.
    static func uppercasedWords(of sql: String) -> Set<String> {
        let isWordOctet = { (octet: UInt8) in
            octet >= 0x80 || octet == UInt8(ascii: "_") || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(octet)
                || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(octet & 0xDF)
        }
        let runs = sql.utf8.split(whereSeparator: { !isWordOctet($0) })
        return Set(runs.map { String(decoding: $0, as: UTF8.self).uppercased() })
    }

    /// DROP TABLE drops the table's triggers; a kept table would keep them.
    private static func hasNoTriggers(_ db: Connection) throws(SQLiteError) -> Bool {
        try db.scalar(
            "SELECT count(*) FROM main.sqlite_schema WHERE type = 'trigger' AND tbl_name = ?1", [.text(table)]
        )?.integerValue == 0
    }

    /// Whether the record index exists (true) or not (false) when the table's indexes are exactly its primary key's
    /// and, if present, the record index, each over v13's key columns; nil for any other set of indexes.
    private static func recordIndexState(_ db: Connection) throws(SQLiteError) -> Bool? {
        let indexes = try db.rows(
            "SELECT name, \"unique\", origin, partial FROM pragma_index_list(?1, 'main') ORDER BY origin DESC",
            [.text(table)])
        guard let primary = indexes.first, primary.count == 4, primary[1] == 1, primary[2] == "pk", primary[3] == 0,
              let primaryName = primary[0].textValue, try keyColumns(of: primaryName, db) == primaryKeyColumns
        else { return nil }
        switch indexes.count {
        case 1:
            return false
        case 2:
            guard indexes[1] == [.text(recordIndex), 0, "c", 0],
                  try keyColumns(of: recordIndex, db) == recordIndexColumns
            else { return nil }
            return true
        default:
            return nil
        }
    }

    /// The index's key columns when each is a named column, ascending, with the binary collation; nil otherwise.
    private static func keyColumns(of index: String, _ db: Connection) throws(SQLiteError) -> [String]? {
        let keys = try db.rows(
            "SELECT name, \"desc\", coll FROM pragma_index_xinfo(?1, 'main') WHERE key = 1 ORDER BY seqno",
            [.text(index)])
        var names: [String] = []
        for key in keys {
            guard key.count == 3, let name = key[0].textValue, key[1] == 0, key[2] == "BINARY" else { return nil }
            names.append(name)
        }
        return names
    }

    /// Whether the copy would store every row as it is: every checksum is TEXT (`CAST(checksum AS TEXT)` changes
    /// only a BLOB, the one other class a TEXT column holds) and no NOT NULL column holds a NULL (which the copy's
    /// INSERT would refuse). Every other value is stored under the same affinity it was stored under.
    private static func allRowsCopyUnchanged(_ db: Connection) throws(SQLiteError) -> Bool {
        try db.scalar("""
            SELECT 1 FROM _synchro_scope_rows
            WHERE typeof(checksum) <> 'text' OR scope_id IS NULL OR table_name IS NULL OR record_id IS NULL
                OR generation IS NULL
            LIMIT 1
            """) == nil
    }
}
