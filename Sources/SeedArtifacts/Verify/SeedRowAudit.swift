import Foundation
import Glibc
import SQLiteKit
import SynchroStore
import SynchroProtocol

/// Re-reads every materialized row of every synced table, converts it back to wire values with the client's
/// mapping, re-digests it against its row version, and checks row versions and provenance edges against the rows
/// (`spec/seed-format.md` §2.5 invariants, §6 item 6, §7.1 items 12–15). Each row is digested once; the
/// recomputed digests feed the edge comparison and the scope digests.
///
/// Rows are streamed table by table through one statement that joins each row with its row version, and edges
/// through one statement per table that joins each edge with its row, so no record ID is ever kept in memory:
/// a row is known by its position in the rowid-ordered scan. One ``RowDigester`` serves every row. What the edges and
/// the scope digests need of a row (rowid, digest, identity) is kept in fixed-size records (``AuditedRows``) and each
/// scope digest is streamed in identity order, so the audit holds a few dozen octets per row, not the scope.
struct SeedRowAudit {
    let connection: Connection
    let manifest: ClientManifest
    /// The scopes the edges may name (the `_synchro_scopes` rows).
    let knownScopes: Set<String>
    let checks: RowAuditChecks
    /// Opens another read-only connection to the same database, for reading the upper half of a large table's rows
    /// on a second thread (``readRowsInHalves(_:versions:digesters:into:)``); nil: every table is read on
    /// `connection` alone.
    var reopen: (@Sendable () throws -> Connection)? = nil
    /// A table whose rowids span at least this many rows, and at most ``splitMaximumRows``, is read in two halves.
    var splitMinimumRows = 20_000
    /// Above this many rows a table is read in one pass: the upper half's records are copied once into the table's
    /// arrays, and for the largest tables that transient copy would raise the install's peak memory
    /// (`docs/performance.md`).
    var splitMaximumRows = 400_000

    /// An edge of a scope: the row it names, by table (index into the audit's tables) and position.
    struct ScopeMember {
        let table: UInt32
        let position: UInt32
    }

    func run(into collector: FindingCollector) throws -> RowAuditResult {
        collector.evaluated(checks.all)
        let before = Dictionary(checks.all.map { ($0, collector.count($0)) }, uniquingKeysWith: { first, _ in first })
        var result = RowAuditResult()
        var digesters = Digesters(
            stored: StoredRowDigester(manifest: manifest.manifest), wire: RowDigester(manifest: manifest.manifest))
        var tables: [AuditedRows] = []
        let tableNames = manifest.localSchema.map(\.tableName)
        let queries = reopen.map { AuditQueries(reopen: $0, tables: tableNames) }
        let versions = try VersionCursor.baselineShaped(on: connection)
        defer { versions?.finish() }
        for table in manifest.localSchema {
            guard let key = table.primaryKeyColumn else { continue }
            let rows = AuditedRows(table: table, key: key)
            rows.reserve(rows: try estimatedRows(table))
            try readRowsInHalves(rows, versions: versions, digesters: &digesters, into: collector)
            try checkDuplicateKeys(rows, into: collector)
            result.rows += rows.rowids.count
            tables.append(rows)
        }
        let answers = try queries?.wait()?.get() ?? AuditQueries.answers(on: connection, tables: tableNames)
        try checkVersionsWithoutRows(tables, counts: answers.versionCounts, into: collector)
        checkEdgesOutsideManifest(answers, into: collector)
        var members: [String: [ScopeMember]] = [:]
        for (index, rows) in tables.enumerated() {
            try readEdges(rows, index: UInt32(index), allRows: result.rows, members: &members, into: collector)
            for position in rows.edgeCounts.indices where rows.edgeCounts[position] == 0 {
                collector.add(checks.rowWithoutEdge, table: rows.table.tableName, row: Int64(position + 1),
                              "the row has no provenance edge in any scope")
            }
        }
        for (scope, scopeMembers) in members {
            result.scopes[scope] = tally(scope: scope, members: scopeMembers, tables: tables)
        }
        for (check, count) in before where collector.count(check) > count {
            result.issues[check] = collector.count(check) - count
        }
        return result
    }

    // MARK: - Rows

    /// The number of rows of `table` if its rowids are dense (the span of its rowids), bounded by the most cells its
    /// file's pages could hold; 0 when unknown. Only sizes the audit's arrays, so it need not be exact.
    private func estimatedRows(_ table: LocalSchemaTable) throws -> Int {
        // Separate subqueries: SQLite finds a lone min() or max() at one end of the b-tree, but scans for both.
        let name = SQLiteIdentifier.quote(table.tableName)
        let span = try connection.scalar(
            "SELECT (SELECT max(rowid) FROM \(name)) - (SELECT min(rowid) FROM \(name)) + 1")?.integerValue ?? 0
        let pages = try connection.scalar("PRAGMA page_count")?.integerValue ?? 0
        let pageSize = try connection.scalar("PRAGMA page_size")?.integerValue ?? 0
        // A table leaf cell takes at least 4 octets and its 2-octet pointer.
        let cells = pages.multipliedReportingOverflow(by: pageSize / 6)
        guard span > 0, !cells.overflow else { return 0 }
        return Int(min(span, cells.partialValue, 1 << 28))
    }

    /// The two digesters of an audit: straight from stored values, and from wire values for the rows the first
    /// does not vouch for.
    struct Digesters {
        var stored: StoredRowDigester
        var wire: RowDigester
    }

    /// A rowid table whose single primary-key column is the key cannot hold two rows with one key; any other
    /// shape (already reported by the shape checks) is searched for repeated record IDs.
    private func checkDuplicateKeys(_ rows: AuditedRows, into collector: FindingCollector) throws {
        let name = rows.table.tableName
        let keyColumns = try connection.query(
            "SELECT name FROM pragma_table_info(?1) WHERE pk > 0", [.text(name)]) { try $0.text(at: 0) }
        let withoutRowid = try connection.scalar(
            "SELECT wr FROM pragma_table_list(?1) WHERE schema = 'main'", [.text(name)])?.integerValue ?? 0
        guard keyColumns != [rows.key.name] || withoutRowid != 0 else { return }
        let key = "CAST(\(SQLiteIdentifier.quote(rows.key.name)) AS TEXT)"
        try connection.forEachRow("""
            SELECT max(rowid) FROM \(SQLiteIdentifier.quote(name)) WHERE \(key) IS NOT NULL
            GROUP BY \(key) HAVING count(*) > 1
            """
        ) { row in
            let ordinal = rows.position(of: row.int64(at: 0)).map { Int64($0 + 1) }
            collector.add(checks.primaryKeyDuplicate, table: name, row: ordinal, "another row has the same record ID")
        }
    }

    // MARK: - Row versions

    /// Row versions of unknown tables, and per synced table the versions no materialized row matched.
    private func checkVersionsWithoutRows(
        _ tables: [AuditedRows], counts: [(table: SQLiteValue, count: Int)], into collector: FindingCollector
    ) throws {
        for (name, count) in counts {
            guard case .text(let tableName) = name, let rows = tables.first(where: { $0.table.tableName == tableName })
            else {
                collector.add(checks.rowVersion, table: "_synchro_row_versions",
                              "\(count) row versions name table \(name.textValue ?? "?"), which the manifest "
                                  + "does not have")
                continue
            }
            guard count != rows.versionsMatched else { continue }
            let key = SQLiteIdentifier.quote(rows.key.name)
            try connection.forEachRow("""
                SELECT v.rowid FROM _synchro_row_versions AS v
                WHERE v.table_name = ?1 AND NOT EXISTS (
                    SELECT 1 FROM \(SQLiteIdentifier.quote(tableName)) AS t
                    WHERE t.\(key) = v.record_id AND CAST(t.\(key) AS TEXT) = v.record_id)
                """, [.text(tableName)]
            ) { row in
                collector.add(checks.versionWithoutRow, table: "_synchro_row_versions", row: row.int64(at: 0),
                              "the row version of a \(tableName) record has no materialized row")
            }
        }
    }

}
