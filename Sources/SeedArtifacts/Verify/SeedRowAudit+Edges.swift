import SQLiteKit
import SynchroStore

extension SeedRowAudit {
    /// Edges naming a table the manifest does not have, or a scope without a `_synchro_scopes` row.
    func checkEdgesOutsideManifest(_ answers: AuditQueries.Answers, into collector: FindingCollector) {
        for (rowid, table) in answers.edgesOfOtherTables {
            collector.add(checks.edge, table: "_synchro_scope_rows", row: rowid,
                          "the edge names table \(table ?? "?"), which the manifest does not have")
        }
        for (scope, count) in answers.edgesOfOtherScopes {
            collector.add(checks.edge, scope: scope, table: "_synchro_scope_rows",
                          "\(count) provenance edges name a scope that has no _synchro_scopes row")
        }
    }

    /// Every edge of the table's records, joined with the row it names (the exact record ID text), its digest
    /// compared with the row's: the row version's digest, which the row pass found equal to the recomputed one
    /// (or kept, when it differs). Row versions are read alongside the edges with `versions` (an exporter writes
    /// both in row-identity order), else through the version table's index.
    func readEdges(
        _ rows: AuditedRows, index: UInt32, allRows: Int, versions: VersionCursor?, scopes: inout [String: ScopeEdges],
        into collector: FindingCollector
    ) throws {
        let name = rows.table.tableName
        let key = "t." + SQLiteIdentifier.quote(rows.key.name)
        // For a table holding most of the rows, `+e.table_name` keeps SQLite from walking the record index: one
        // scan of the edges is cheaper than an index probe per edge. A small table's few edges are found through
        // the index instead of a scan of every edge.
        let filter = rows.count * 4 < allRows ? "e.table_name = ?1" : "+e.table_name = ?1"
        // When the key is the rowid and the record ID has the baseline's TEXT affinity (so it holds text or a blob,
        // never a number), the join below matches exactly the edges whose record ID is the canonical decimal text
        // of a rowid: that text is parsed instead of searching the table once per edge.
        let keyIsRowid = try SeedBaseline.hasBaselineDDL("_synchro_scope_rows", on: connection)
            && isRowidAlias(rows)
        // Without a version cursor (a version table not shaped as the baseline's), the first version of the record.
        let version = versions == nil ? """
            , (SELECT v.row_checksum FROM _synchro_row_versions AS v
               WHERE v.table_name = ?1 AND v.record_id = e.record_id ORDER BY v.rowid LIMIT 1)
            """ : ""
        let statement = try connection.prepare(keyIsRowid ? """
            SELECT e.rowid, e.scope_id, e.checksum, e.generation, e.record_id, e.record_id\(version)
            FROM _synchro_scope_rows AS e WHERE \(filter)
            """ : """
            SELECT e.rowid, e.scope_id, e.checksum, e.generation, t.rowid, e.record_id\(version)
            FROM _synchro_scope_rows AS e
            LEFT JOIN \(SQLiteIdentifier.quote(name)) AS t
                ON \(key) = e.record_id AND CAST(\(key) AS TEXT) = e.record_id
            WHERE \(filter)
            """)
        try statement.bind([.text(name)])
        defer { statement.reset() }
        let tableOctets = Array(name.utf8)
        var currentScope: String?
        var currentScopeText: [UInt8] = []
        var currentKnown = false
        var current = ScopeEdges()
        func flush() {
            if let currentScope, current.members > 0 { scopes[currentScope, default: ScopeEdges()].merge(current) }
            current = ScopeEdges()
        }
        while try statement.step() {
            let rowid = statement.int64(at: 0)
            // Edges come grouped by scope: the scope ID is decoded only when its octets change.
            let sameScope = currentScope != nil && statement.storageClass(at: 1) == .text
                && statement.withTextBytes(at: 1) { $0.elementsEqual(currentScopeText) }
            if !sameScope {
                let scope = (try? statement.value(at: 1))?.textValue ?? ""
                if scope != currentScope {
                    flush()
                    currentScope = scope
                    currentScopeText = Array(scope.utf8)
                    currentKnown = knownScopes.contains(scope)
                }
            }
            guard currentKnown, let scope = currentScope else { continue }
            if case .integer(0) = try statement.value(at: 3) {} else {
                collector.add(checks.edge, scope: scope, table: "_synchro_scope_rows", row: rowid,
                              "the edge of a \(name) record has a generation other than the integer 0")
            }
            let rowRowid: Int64? = if keyIsRowid {
                statement.storageClass(at: 4) == .text ? statement.withTextBytes(at: 4, Self.canonicalInteger) : nil
            } else {
                statement.isNull(at: 4) ? nil : statement.int64(at: 4)
            }
            guard let rowRowid, let position = rows.position(of: rowRowid) else {
                current.exactTables.insert(index)
                collector.add(checks.edgeWithoutRow, scope: scope, table: "_synchro_scope_rows", row: rowid,
                              "the edge names a \(name) record that is not materialized")
                continue
            }
            rows.markEdge(position)
            current.members += 1
            current.tables.insert(index)
            if !rows.isDigested(position) || rows.differingDigests[position] != nil {
                current.exactTables.insert(index)
            }
            guard !rows.withoutVersion.contains(position) else { continue }
            let matches: Bool
            if let expected = rows.versionDigests[position] {
                matches = statement.withTextBytes(at: 2) { ChecksumText.bareHex($0, equals: expected) }
            } else if let versions {
                matches = try versions.find(table: name, tableOctets: tableOctets, key: statement, at: 5)
                    && Self.edge(statement, carries: versions.columns.statement, at: versions.columns.rowChecksum)
            } else {
                matches = Self.edge(statement, carries: statement, at: 6)
            }
            if !matches {
                current.exactTables.insert(index)
                let wellFormed = statement.withTextBytes(at: 2) { ChecksumText.bareDigest($0) } != nil
                collector.add(checks.edgeDigest, scope: scope, table: name, row: Int64(position + 1),
                              wellFormed ? "the edge digest differs from the row's row checksum"
                                  : "the edge digest is not 64 lowercase hex characters")
            }
        }
        flush()
    }

    /// Whether the edge digest (column 2 of `edge`) is the digest the row checksum at `column` of `version` carries.
    private static func edge(_ edge: Statement, carries version: Statement, at column: Int) -> Bool {
        guard version.storageClass(at: column) == .text,
              let digest = edge.withTextBytes(at: 2, ChecksumText.bareDigest)
        else { return false }
        return version.withTextBytes(at: column) { ChecksumText.object($0, carries: digest) } == true
    }

    /// Whether the table's key column is its rowid (`INTEGER PRIMARY KEY` of a rowid table: the only key, with no
    /// index of its own).
    private func isRowidAlias(_ rows: AuditedRows) throws -> Bool {
        let name = rows.table.tableName
        let keyColumns = try connection.query(
            "SELECT name, upper(type) FROM pragma_table_info(?1) WHERE pk > 0", [.text(name)]
        ) { (try $0.text(at: 0), try $0.text(at: 1)) }
        guard keyColumns.count == 1, keyColumns[0].0 == rows.key.name, keyColumns[0].1 == "INTEGER" else {
            return false
        }
        let withoutRowid = try connection.scalar(
            "SELECT wr FROM pragma_table_list(?1) WHERE schema = 'main'", [.text(name)])?.integerValue ?? 1
        let keyIndexes = try connection.scalar(
            "SELECT count(*) FROM pragma_index_list(?1) WHERE origin = 'pk'", [.text(name)])?.integerValue ?? 1
        return withoutRowid == 0 && keyIndexes == 0
    }

    /// The integer whose canonical decimal text (`CAST(integer AS TEXT)`) is `text`, octet for octet; nil for any
    /// other text (a sign, leading zeros, `-0`, spaces, a fraction, out of range).
    static func canonicalInteger(_ text: UnsafeBufferPointer<UInt8>) -> Int64? {
        guard !text.isEmpty, text.count <= 20 else { return nil }
        let negative = text[0] == UInt8(ascii: "-")
        var index = negative ? 1 : 0
        guard index < text.count else { return nil }
        if text[index] == UInt8(ascii: "0") { return !negative && text.count == 1 ? 0 : nil }
        var value: Int64 = 0
        while index < text.count {
            let digit = text[index] &- UInt8(ascii: "0")
            guard digit < 10 else { return nil }
            let (shifted, overflowed) = value.multipliedReportingOverflow(by: 10)
            let (next, carried) = negative
                ? shifted.subtractingReportingOverflow(Int64(digit)) : shifted.addingReportingOverflow(Int64(digit))
            guard !overflowed, !carried else { return nil }
            value = next
            index += 1
        }
        return value
    }
}
