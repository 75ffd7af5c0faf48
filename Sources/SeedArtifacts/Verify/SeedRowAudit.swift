import Foundation
import Glibc
import SQLiteKit
import SynchroStore
import SynchroProtocol

/// Re-reads every materialized row of every synced table, converts it back to wire values with the client's
/// mapping, re-digests it against its row version, and checks row versions and provenance edges against the rows
/// (`spec/seed-format.md` §2.5 invariants, §6 item 6, §7.1 items 12–15). Each row is digested once and compared
/// with its row version; each edge is compared with its row's version, so with the recomputed digest.
///
/// Rows are streamed table by table along their row versions, and edges through one statement per table that joins
/// each edge with its row and reads its version alongside, so no record ID is ever kept in memory: a row is known by
/// its position in the rowid-ordered scan. One ``RowDigester`` serves every row. Of a row that passed its checks
/// the audit keeps one bit (an edge names it, ``AuditedRows``), and each scope digest is streamed from SQL in
/// identity order from the edges, so the audit's memory does not grow with the seed (issue #21).
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
    /// Above this many rows a table is read in one pass. Nothing of a valid row is kept, so the upper half costs no
    /// memory to merge (before issue #21 its records were copied, and this was 400,000): no bound by default.
    var splitMaximumRows = Int.max

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
            try readRowsInHalves(rows, versions: versions, digesters: &digesters, into: collector)
            try checkDuplicateKeys(rows, into: collector)
            result.rows += rows.count
            tables.append(rows)
        }
        let answers = try queries?.wait()?.get() ?? AuditQueries.answers(on: connection, tables: tableNames)
        try checkVersionsWithoutRows(tables, counts: answers.versionCounts, into: collector)
        checkEdgesOutsideManifest(answers, into: collector)
        var scopes: [String: ScopeEdges] = [:]
        let edgeVersions = try VersionCursor.baselineShaped(on: connection)
        defer { edgeVersions?.finish() }
        for (index, rows) in tables.enumerated() {
            try readEdges(rows, index: UInt32(index), allRows: result.rows, versions: edgeVersions, scopes: &scopes,
                          into: collector)
            rows.positionsWithoutEdge { position in
                collector.add(checks.rowWithoutEdge, table: rows.table.tableName, row: Int64(position + 1),
                              "the row has no provenance edge in any scope")
            }
        }
        for (scope, edges) in scopes {
            result.scopes[scope] = try tally(scope: scope, edges: edges, tables: tables)
        }
        for (check, count) in before where collector.count(check) > count {
            result.issues[check] = collector.count(check) - count
        }
        return result
    }

    // MARK: - Rows

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
