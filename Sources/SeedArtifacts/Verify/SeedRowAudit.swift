import Foundation
import Glibc
import SQLiteKit
import SynchroStore
import SynchroProtocol

/// Which check each kind of row-audit finding is reported under: the publication checks (§6 item 6) and the
/// installer's validation (§7.1 items 12–15) run the same audit on different files.
struct RowAuditChecks {
    let rowVersion: SeedCheck
    let primaryKey: SeedCheck
    let primaryKeyDuplicate: SeedCheck
    let rowValue: SeedCheck
    let rowWithoutVersion: SeedCheck
    let versionWithoutRow: SeedCheck
    let rowDigest: SeedCheck
    let edge: SeedCheck
    let edgeWithoutRow: SeedCheck
    let edgeDigest: SeedCheck
    let rowWithoutEdge: SeedCheck

    static let publication = RowAuditChecks(
        rowVersion: .rowVersionInvalid, primaryKey: .primaryKeyStorage, primaryKeyDuplicate: .primaryKeyDuplicate,
        rowValue: .rowValueInvalid, rowWithoutVersion: .rowWithoutVersion, versionWithoutRow: .versionWithoutRow,
        rowDigest: .rowDigestMismatch, edge: .edgeInvalid, edgeWithoutRow: .edgeWithoutRow,
        edgeDigest: .edgeDigestMismatch, rowWithoutEdge: .rowWithoutEdge)

    static let installer = RowAuditChecks(
        rowVersion: .installerRowVersion, primaryKey: .installerMaterializedRows,
        primaryKeyDuplicate: .installerMaterializedRows, rowValue: .installerScopeDigest,
        rowWithoutVersion: .installerMaterializedRows, versionWithoutRow: .installerMaterializedRows,
        rowDigest: .installerScopeDigest, edge: .installerScopeRow, edgeWithoutRow: .installerMaterializedRows,
        edgeDigest: .installerScopeRow, rowWithoutEdge: .installerMaterializedRows)

    var all: [SeedCheck] {
        [rowVersion, primaryKey, primaryKeyDuplicate, rowValue, rowWithoutVersion, versionWithoutRow, rowDigest, edge,
         edgeWithoutRow, edgeDigest, rowWithoutEdge]
    }
}

/// What the audit recomputed for one scope from its provenance edges and the re-digested rows.
struct ScopeTally: Sendable {
    /// Number of edges of the scope.
    var edges = 0
    /// The recomputed scope digest; nil when an edge's row could not be digested (already reported).
    var digest: [UInt8]?
}

/// The outcome of a row audit.
struct RowAuditResult: Sendable {
    /// Materialized rows read.
    var rows = 0
    /// Per scope named by an edge.
    var scopes: [String: ScopeTally] = [:]
    /// How many findings of each of the audit's checks it recorded.
    var issues: [SeedCheck: Int] = [:]
}

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
    /// arrays, and at a million rows that transient copy (about 30 MB) would raise the install's peak memory.
    var splitMaximumRows = 400_000

    /// An edge of a scope: the row it names, by table (index into the audit's tables) and position.
    private struct ScopeMember {
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

    /// ``readRows(_:versions:digesters:into:)``, with the rows above the middle rowid of a large table read on a
    /// second connection and thread (``AuditHalf``) while this one reads the rows up to it. The upper half's rows
    /// and findings are then appended in scan order — positions, ordinals and the per-check listing limit exactly
    /// as a single scan would have recorded them. When the second connection cannot be opened or is not
    /// baseline-shaped, the upper half is read here after the lower one.
    private func readRowsInHalves(
        _ rows: AuditedRows, versions: VersionCursor?, digesters: inout Digesters, into collector: FindingCollector
    ) throws {
        guard let versions, let reopen, let middle = try middleRowid(rows.table) else {
            try readRows(rows, versions: versions, digesters: &digesters, into: collector)
            return
        }
        let upper = AuditHalf(audit: self, reopen: reopen, table: rows.table, key: rows.key, after: middle,
                              limit: collector.limit)
        let lowerFailure: (any Error)?
        do {
            try readRowsAlongVersions(rows, versions: versions, range: .through(middle), digesters: &digesters,
                                      into: collector)
            lowerFailure = nil
        } catch {
            lowerFailure = error
        }
        let half = upper.wait()
        if let lowerFailure { throw lowerFailure }
        guard let half else {
            try readRowsAlongVersions(rows, versions: versions, range: .after(middle), digesters: &digesters,
                                      into: collector)
            return
        }
        let offset = Int64(rows.count)
        rows.append(contentsOf: half.rows)
        collector.append(half.collector, shiftingRowsOf: rows.table.tableName, by: offset)
        if let failure = half.failure { throw failure }
    }

    /// The rowid splitting the table's rows in two halves, when the span of its rowids is within
    /// ``splitMinimumRows``…``splitMaximumRows``; nil otherwise, and nil when a column is named like the rowid
    /// (`t.rowid` would then be that column, and a NULL in it would fall in neither half).
    private func middleRowid(_ table: LocalSchemaTable) throws -> Int64? {
        guard !table.columns.contains(where: { ["rowid", "_rowid_", "oid"].contains($0.name.lowercased()) }) else {
            return nil
        }
        let name = SQLiteIdentifier.quote(table.tableName)
        let bounds = try connection.query(
            "SELECT (SELECT min(rowid) FROM \(name)), (SELECT max(rowid) FROM \(name))"
        ) { row -> (Int64, Int64)? in
            row.isNull(at: 0) || row.isNull(at: 1) ? nil : (row.int64(at: 0), row.int64(at: 1))
        }
        guard let first = bounds.first, let (low, high) = first else { return nil }
        let (span, overflow) = high.subtractingReportingOverflow(low)
        guard !overflow, span < Int64(splitMaximumRows), span + 1 >= Int64(splitMinimumRows) else { return nil }
        return low + span / 2
    }

    private func readRows(
        _ rows: AuditedRows, versions: VersionCursor?, digesters: inout Digesters, into collector: FindingCollector
    ) throws {
        if let versions {
            try readRowsAlongVersions(rows, versions: versions, digesters: &digesters, into: collector)
            return
        }
        let table = rows.table
        let columns = table.columns.map { "t." + SQLiteIdentifier.quote($0.name) }.joined(separator: ", ")
        let statement = try connection.prepare("""
            SELECT t.rowid, \(columns), v.rowid, v.server_version, v.row_checksum
            FROM \(SQLiteIdentifier.quote(table.tableName)) AS t
            LEFT JOIN _synchro_row_versions AS v
                ON v.table_name = ?1 AND v.record_id = CAST(t.\(SQLiteIdentifier.quote(rows.key.name)) AS TEXT)
            ORDER BY t.rowid
            """)
        try statement.bind([.text(table.tableName)])
        defer { statement.reset() }
        let version = VersionColumns(statement: statement, first: table.columns.count + 1)
        let layout = digesters.stored.layout(for: table)
        // One member per column, overwritten in place row after row (the row object built from it is released
        // before the next row, so no copy is made).
        var members = table.columns.map { JSONMember($0.fieldID, .null) }
        while try statement.step() {
            let rowid = statement.int64(at: 0)
            // A second version with the same record ID repeats the row in the join (only possible when the
            // version table lost its primary key, which the shape checks report).
            if rowid == rows.rowids.last {
                collector.add(checks.rowVersion, table: table.tableName, row: Int64(rows.rowids.count),
                              "the row has more than one row version")
                continue
            }
            try digestRow(statement, rowid: rowid, version: statement.isNull(at: version.first) ? nil : version,
                          rows, layout: layout, members: &members, digesters: &digesters, into: collector)
        }
    }

    /// The join of ``readRows(_:versions:digesters:into:)`` as two scans side by side: the table in rowid order and
    /// `_synchro_row_versions` in rowid order, which an exporter writes in the same order (rows by row identity),
    /// so that each row's version is usually the next version row instead of an index search and a table search.
    /// A row whose version is not the next one is searched through the index as the join would, and the version
    /// scan continues from what it found. Used only when the version table has the baseline's DDL, whose primary
    /// key makes (table, record ID) unique and compares with the binary collation, exactly as the join does.
    func readRowsAlongVersions(
        _ rows: AuditedRows, versions: VersionCursor, range: RowidRange = .all, digesters: inout Digesters,
        into collector: FindingCollector
    ) throws {
        let table = rows.table
        let columns = table.columns.map { "t." + SQLiteIdentifier.quote($0.name) }.joined(separator: ", ")
        let statement = try connection.prepare("""
            SELECT t.rowid, \(columns), t.\(SQLiteIdentifier.quote(rows.key.name))
            FROM \(SQLiteIdentifier.quote(table.tableName)) AS t \(range.whereClause) ORDER BY t.rowid
            """)
        if let bound = range.bound { try statement.bind([.integer(bound)]) }
        defer { statement.reset() }
        let keyColumn = table.columns.count + 1
        let layout = digesters.stored.layout(for: table)
        var members = table.columns.map { JSONMember($0.fieldID, .null) }
        let tableName = Array(table.tableName.utf8)
        while try statement.step() {
            let rowid = statement.int64(at: 0)
            let found = try versions.find(table: table.tableName, tableOctets: tableName, key: statement, at: keyColumn)
            try digestRow(statement, rowid: rowid, version: found ? versions.columns : nil, rows, layout: layout,
                          members: &members, digesters: &digesters, into: collector)
        }
    }

    /// Digests the current row of `statement` (its rowid, then the table's columns), with its row version's
    /// columns at `version` (nil: no row version).
    private func digestRow(
        _ statement: Statement, rowid: Int64, version: VersionColumns?, _ rows: AuditedRows, layout: StoredRowLayout?,
        members: inout [JSONMember], digesters: inout Digesters, into collector: FindingCollector
    ) throws {
        let position = rows.count
        if let layout, let version, Self.storedDigest(
            statement, layout: layout, version: version, digester: &digesters.stored, { identity, digest in
                record(identity: identity, digest: digest, rows, rowid: rowid, position: position, version: version,
                       into: collector)
            }) != nil
        {
            rows.versionsMatched += 1
            return
        }
        try readRow(statement, rows, rowid: rowid, position: position, members: &members, version: version,
                    digester: &digesters.wire, into: collector)
    }

    /// The row digested straight from the stored values of the current row, when its row version's server
    /// version is text and every value is in a form ``StoredRowDigester`` vouches for — exactly the rows the wire
    /// path would digest without a finding, to the same digest. Nil otherwise, having recorded nothing.
    /// `body` gets the identity's and the digest's octets, valid while it runs.
    private static func storedDigest(
        _ statement: Statement, layout: StoredRowLayout, version: VersionColumns, digester: inout StoredRowDigester,
        _ body: (_ identity: UnsafeBufferPointer<UInt8>, _ digest: UnsafeBufferPointer<UInt8>) -> Void
    ) -> Void? {
        guard version.statement.storageClass(at: version.serverVersion) == .text else { return nil }
        return version.statement.withTextBytes(at: version.serverVersion) { serverVersion in
            digester.withDigest(layout, serverVersion: serverVersion, values: { column, value in
                statement.store(column: 1 + column, into: &value)
            }, body)
        }
    }

    /// The wire path: every stored value is read, checked and converted with the client's mapping, and the row
    /// digested from the wire values; each problem is a finding.
    private func readRow(
        _ statement: Statement, _ rows: AuditedRows, rowid: Int64, position: Int, members: inout [JSONMember],
        version: VersionColumns?, digester: inout RowDigester, into collector: FindingCollector
    ) throws {
        let table = rows.table
        let ordinal = Int64(position + 1)
        var valid = true
        var keyWire: JSONValue?
        for (index, column) in table.columns.enumerated() {
            let stored = try statement.value(at: 1 + index)
            if column.isPrimaryKey && !Self.keyStorageFits(stored, column.logicalType) {
                collector.add(checks.primaryKey, table: table.tableName, row: ordinal,
                              "the primary key is stored as \(stored.storageClassName), which type "
                                  + "\(column.logicalType.rawValue) does not allow")
                valid = false
                continue
            }
            guard let wire = SeedWireValue.wireValue(stored, type: column.logicalType) else {
                collector.add(checks.rowValue, table: table.tableName, row: ordinal,
                              "field \(column.fieldID): a stored \(stored.storageClassName) does not fit type "
                                  + column.logicalType.rawValue)
                valid = false
                continue
            }
            if column.isPrimaryKey { keyWire = wire }
            members[index] = JSONMember(column.fieldID, wire)
        }
        guard let version else {
            collector.add(checks.rowWithoutVersion, table: table.tableName, row: ordinal, "the row has no row version")
            rows.withoutVersion.insert(position)
            rows.append(rowid: rowid, identity: identity(table, keyWire), digest: nil)
            return
        }
        rows.versionsMatched += 1
        let serverVersion: String?
        if case .text(let text) = try version.statement.value(at: version.serverVersion), !text.isEmpty {
            serverVersion = text
        } else {
            serverVersion = nil
            collector.add(checks.rowVersion, table: table.tableName, row: ordinal,
                          "the row's server version is empty or not text")
        }
        guard valid, let keyWire, let serverVersion else {
            rows.append(rowid: rowid, identity: identity(table, keyWire), digest: nil)
            rows.versionDigests[position] = versionDigest(version, table: table.tableName, ordinal: ordinal,
                                                          into: collector)
            return
        }
        do {
            let computed = try digester.digest(
                tableID: table.tableID, primaryKey: keyWire, row: .object(JSONObject(members)),
                serverVersion: serverVersion)
            computed.identity.bytes.withUnsafeBufferPointer { identity in
                computed.digest.withUnsafeBufferPointer { digest in
                    record(identity: identity, digest: digest, rows, rowid: rowid, position: position,
                           version: version, into: collector)
                }
            }
        } catch {
            rows.append(rowid: rowid, identity: identity(table, keyWire), digest: nil)
            rows.versionDigests[position] = versionDigest(version, table: table.tableName, ordinal: ordinal,
                                                          into: collector)
            collector.add(checks.rowValue, table: table.tableName, row: ordinal,
                          "the row cannot be digested: \(error.rule): \(error)")
        }
    }

    /// Records a recomputed digest and compares it with the row's row checksum.
    private func record(
        identity: UnsafeBufferPointer<UInt8>, digest: UnsafeBufferPointer<UInt8>, _ rows: AuditedRows, rowid: Int64,
        position: Int, version: VersionColumns, into collector: FindingCollector
    ) {
        rows.append(rowid: rowid, identityOctets: identity, digest: digest)
        let checksum = version.rowChecksum
        let matches = version.statement.isNull(at: checksum) ? nil : version.statement.withTextBytes(
            at: checksum) { ChecksumText.object($0, carries: digest) }
        guard matches != true else { return }
        let ordinal = Int64(position + 1)
        rows.versionDigests[position] = versionDigest(
            version, table: rows.table.tableName, ordinal: ordinal, into: collector)
        if matches == false {
            collector.add(checks.rowDigest, table: rows.table.tableName, row: ordinal,
                          "the row re-digested from its stored values differs from its row checksum")
        }
    }

    /// The storage-class rule of §7.1 item 14: TEXT for `string`, INTEGER within int32 for `int`, INTEGER for
    /// `int64`.
    private static func keyStorageFits(_ stored: SQLiteValue, _ type: PortableType) -> Bool {
        switch (type, stored) {
        case (.string, .text): true
        case (.int, .integer(let integer)): Int32(exactly: integer) != nil
        case (.int64, .integer): true
        default: false
        }
    }

    private func identity(_ table: LocalSchemaTable, _ key: JSONValue?) -> RowIdentity? {
        key.flatMap { try? RowIdentity(manifest: manifest.manifest, tableID: table.tableID, primaryKey: $0) }
    }

    /// The digest of the row checksum at `column`; empty, reported, when it is not a checksum object.
    private func versionDigest(
        _ version: VersionColumns, table: String, ordinal: Int64, into collector: FindingCollector
    ) -> [UInt8] {
        let statement = version.statement
        let column = version.rowChecksum
        let digest = statement.isNull(at: column) ? nil : statement.withTextBytes(at: column, ChecksumText.objectDigest)
        guard let digest else {
            collector.add(checks.rowVersion, table: table, row: ordinal,
                          "the row's row checksum is not a checksum object")
            return []
        }
        return digest
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

    // MARK: - Edges

    /// Edges naming a table the manifest does not have, or a scope without a `_synchro_scopes` row.
    private func checkEdgesOutsideManifest(_ answers: AuditQueries.Answers, into collector: FindingCollector) {
        for (rowid, table) in answers.edgesOfOtherTables {
            collector.add(checks.edge, table: "_synchro_scope_rows", row: rowid,
                          "the edge names table \(table ?? "?"), which the manifest does not have")
        }
        for (scope, count) in answers.edgesOfOtherScopes {
            collector.add(checks.edge, scope: scope, table: "_synchro_scope_rows",
                          "\(count) provenance edges name a scope that has no _synchro_scopes row")
        }
    }

    /// Every edge of the table's records, joined with the row it names (the exact record ID text).
    private func readEdges(
        _ rows: AuditedRows, index: UInt32, allRows: Int, members: inout [String: [ScopeMember]],
        into collector: FindingCollector
    ) throws {
        let name = rows.table.tableName
        let key = "t." + SQLiteIdentifier.quote(rows.key.name)
        // For a table holding most of the rows, `+e.table_name` keeps SQLite from walking the record index: one
        // scan of the edges is cheaper than an index probe per edge. A small table's few edges are found through
        // the index instead of a scan of every edge.
        let filter = rows.rowids.count * 4 < allRows ? "e.table_name = ?1" : "+e.table_name = ?1"
        // When the key is the rowid and the record ID has the baseline's TEXT affinity (so it holds text or a blob,
        // never a number), the join below matches exactly the edges whose record ID is the canonical decimal text
        // of a rowid: that text is parsed instead of searching the table once per edge.
        let keyIsRowid = try SeedBaseline.hasBaselineDDL("_synchro_scope_rows", on: connection)
            && isRowidAlias(rows)
        let statement = try connection.prepare(keyIsRowid ? """
            SELECT e.rowid, e.scope_id, e.checksum, e.generation, e.record_id
            FROM _synchro_scope_rows AS e WHERE \(filter)
            """ : """
            SELECT e.rowid, e.scope_id, e.checksum, e.generation, t.rowid
            FROM _synchro_scope_rows AS e
            LEFT JOIN \(SQLiteIdentifier.quote(name)) AS t
                ON \(key) = e.record_id AND CAST(\(key) AS TEXT) = e.record_id
            WHERE \(filter)
            """)
        try statement.bind([.text(name)])
        defer { statement.reset() }
        var currentScope: String?
        var currentScopeText: [UInt8] = []
        var currentKnown = false
        var current: [ScopeMember] = []
        func flush() {
            if let currentScope, !current.isEmpty { members[currentScope, default: []].append(contentsOf: current) }
            current.removeAll(keepingCapacity: true)
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
                collector.add(checks.edgeWithoutRow, scope: scope, table: "_synchro_scope_rows", row: rowid,
                              "the edge names a \(name) record that is not materialized")
                continue
            }
            rows.edgeCounts[position] += 1
            current.append(ScopeMember(table: index, position: UInt32(position)))
            guard !rows.withoutVersion.contains(position) else { continue }
            let matches = rows.withExpectedDigest(at: position) { expected in
                statement.withTextBytes(at: 2) { ChecksumText.bareHex($0, equals: expected) }
            }
            if !matches {
                let wellFormed = statement.withTextBytes(at: 2) { ChecksumText.bareDigest($0) } != nil
                collector.add(checks.edgeDigest, scope: scope, table: name, row: Int64(position + 1),
                              wellFormed ? "the edge digest differs from the row's row checksum"
                                  : "the edge digest is not 64 lowercase hex characters")
            }
        }
        flush()
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

    // MARK: - Scope digests

    /// The scope's tally: its edge count, and its digest streamed through ``ScopeDigestAccumulator`` in row-identity
    /// order, so that one entry is built at a time instead of the scope's preimage (`spec/integrity.md` §4.6). As
    /// ``ScopeDigest/compute(schemaHash:scopeID:entries:)`` would, an edge whose row has no identity or digest, or
    /// two edges of one identity, leave the digest unknown.
    private func tally(scope: String, members: [ScopeMember], tables: [AuditedRows]) -> ScopeTally {
        var tally = ScopeTally(edges: members.count)
        for member in members where !tables[Int(member.table)].isDigested(Int(member.position)) { return tally }
        let ordered = Self.identityOrder(members, tables)
        guard var accumulator = try? ScopeDigestAccumulator(
            schemaHash: manifest.manifest.schemaHashOctets, scopeID: scope, cardinality: UInt64(ordered.count))
        else { return tally }
        for member in ordered where !tables[Int(member.table)].feed(Int(member.position), into: &accumulator) {
            return tally
        }
        tally.digest = try? accumulator.finalize()
        return tally
    }

    /// `members` (each with an identity) in identity order. When every identity of each table starts with the
    /// table's prefix and no table's prefix starts another's, two rows of different tables compare as their prefixes
    /// do, so each table's rows are sorted by their suffixes and the tables by their prefixes; otherwise the
    /// identities are compared whole.
    private static func identityOrder(_ members: [ScopeMember], _ tables: [AuditedRows]) -> [ScopeMember] {
        var byTable = [[UInt32]](repeating: [], count: tables.count)
        for member in members { byTable[Int(member.table)].append(member.position) }
        let present = byTable.indices.filter { !byTable[$0].isEmpty }
        let prefixes = present.compactMap { index in tables[index].identityPrefix.map { (index, $0) } }
            .sorted { $0.1.lexicographicallyPrecedes($1.1) }
        let separable = prefixes.count == present.count
            && present.allSatisfy { tables[$0].allIdentitiesSharePrefix }
            && zip(prefixes, prefixes.dropFirst()).allSatisfy { !$1.1.starts(with: $0.1) }
        guard separable else {
            return members.sorted { a, b in
                tables[Int(a.table)].identityPrecedes(Int(a.position), tables[Int(b.table)], Int(b.position))
            }
        }
        var ordered: [ScopeMember] = []
        ordered.reserveCapacity(members.count)
        for (index, _) in prefixes {
            tables[index].sortByIdentity(&byTable[index])
            ordered.append(contentsOf: byTable[index].map { ScopeMember(table: UInt32(index), position: $0) })
        }
        return ordered
    }
}

extension SQLiteValue {
    /// SQLite's name of the storage class (`typeof()`), for messages that must not show the value.
    var storageClassName: String {
        switch self {
        case .null: "null"
        case .integer: "integer"
        case .real: "real"
        case .text: "text"
        case .blob: "blob"
        }
    }
}

/// Which rows of a table a scan reads, by rowid.
enum RowidRange {
    case all
    /// Rowids up to and including the bound.
    case through(Int64)
    /// Rowids above the bound.
    case after(Int64)

    var whereClause: String {
        switch self {
        case .all: ""
        case .through: "WHERE t.rowid <= ?1"
        case .after: "WHERE t.rowid > ?1"
        }
    }

    var bound: Int64? {
        switch self {
        case .all: nil
        case .through(let bound), .after(let bound): bound
        }
    }
}

/// The upper half of a table's rows, read by ``SeedRowAudit`` on a connection and thread of its own into rows and
/// findings of its own (positions and ordinals counted from the half's first row).
final class AuditHalf {
    struct Outcome {
        let rows: AuditedRows
        let collector: FindingCollector
        /// What stopped the read (the rows and findings before it are kept).
        let failure: (any Error)?
    }

    /// Nil when the thread could not open a baseline-shaped connection (nothing was read).
    private let outcome: Eventual<Outcome?>

    init(
        audit: SeedRowAudit, reopen: @escaping @Sendable () throws -> Connection, table: LocalSchemaTable,
        key: LocalSchemaColumn, after middle: Int64, limit: Int
    ) {
        let manifest = audit.manifest
        let knownScopes = audit.knownScopes
        let checks = audit.checks
        outcome = Eventual(onThread: {
            guard let connection = try? reopen() else { return nil }
            defer { connection.close() }
            // The half is one forward scan: a small page cache is enough.
            guard (try? connection.execute("PRAGMA cache_size = -2048")) != nil,
                  let versions = try? VersionCursor.baselineShaped(on: connection)
            else { return nil }
            defer { versions.finish() }
            let half = SeedRowAudit(connection: connection, manifest: manifest, knownScopes: knownScopes,
                                    checks: checks)
            let rows = AuditedRows(table: table, key: key)
            let collector = FindingCollector(limit: limit)
            var digesters = SeedRowAudit.Digesters(
                stored: StoredRowDigester(manifest: manifest.manifest), wire: RowDigester(manifest: manifest.manifest))
            var failure: (any Error)?
            do {
                try half.readRowsAlongVersions(rows, versions: versions, range: .after(middle),
                                               digesters: &digesters, into: collector)
            } catch {
                failure = error
            }
            return Outcome(rows: rows, collector: collector, failure: failure)
        })
    }

    /// Waits for the thread; nil when it could not open a baseline-shaped connection (nothing was read).
    func wait() -> Outcome? {
        outcome.wait()
    }
}

/// Where the columns of a row version are in a statement's current row.
struct VersionColumns {
    let statement: Statement
    /// `server_version`, then `row_checksum`; `first` is the version's rowid.
    let first: Int

    var serverVersion: Int { first + 1 }
    var rowChecksum: Int { first + 2 }
}

/// `_synchro_row_versions` read in rowid order alongside a table, for ``SeedRowAudit``: finds each row's version
/// by comparing it with the next version row, and through the primary-key index (as the join it replaces) when
/// that is not the one.
final class VersionCursor {
    private let scan: Statement
    private let search: Statement
    /// Whether `scan` is on a row.
    private var positioned = false
    /// Whether the row `scan` is on was handed out, so the next search starts past it.
    private var consumed = false

    /// The version columns of the row ``find(table:tableOctets:key:at:)`` found.
    var columns: VersionColumns { VersionColumns(statement: scan, first: 0) }

    private init(scan: Statement, search: Statement) {
        self.scan = scan
        self.search = search
    }

    /// A cursor when `_synchro_row_versions` has exactly the baseline's DDL (its primary key is then the unique,
    /// binary-collated index the join searches); nil otherwise, and the audit joins.
    static func baselineShaped(on connection: Connection) throws -> VersionCursor? {
        guard try SeedBaseline.hasBaselineDDL("_synchro_row_versions", on: connection) else { return nil }
        let scan = try connection.prepare("""
            SELECT rowid, server_version, row_checksum, table_name, record_id FROM _synchro_row_versions
            WHERE rowid >= ?1 ORDER BY rowid
            """)
        let search = try connection.prepare(
            "SELECT rowid FROM _synchro_row_versions WHERE table_name = ?1 AND record_id = CAST(?2 AS TEXT)")
        return VersionCursor(scan: scan, search: search)
    }

    /// Positions the cursor on the version of the row whose key is column `column` of `key`'s current row, in
    /// `table` (`tableOctets`: its UTF-8); false when the row has none.
    func find(table: String, tableOctets: [UInt8], key: Statement, at column: Int) throws -> Bool {
        if consumed {
            positioned = try scan.step()
            consumed = false
        }
        if positioned, matches(tableOctets, key: key, at: column) {
            consumed = true
            return true
        }
        // Not the next version row: search the index with the join's condition, and read on from there.
        try search.bind(.text(table), at: 1)
        try search.bind(try key.value(at: column), at: 2)
        defer { search.reset() }
        guard try search.step() else { return false }
        scan.reset()
        try scan.bind(.integer(search.int64(at: 0)), at: 1)
        positioned = try scan.step()
        consumed = positioned
        return positioned
    }

    func finish() {
        scan.reset()
        search.reset()
    }

    /// Whether the scan's row names `table` and the key's text (`CAST(key AS TEXT)` of an integer or text key, octet
    /// for octet); any other key is left to the index search.
    private func matches(_ table: [UInt8], key: Statement, at column: Int) -> Bool {
        guard scan.storageClass(at: 3) == .text, scan.storageClass(at: 4) == .text,
              table.withUnsafeBufferPointer({ table in scan.withTextBytes(at: 3) { OctetRange.equal($0, table) } })
        else { return false }
        switch key.storageClass(at: column) {
        case .integer:
            return scan.withTextBytes(at: 4, SeedRowAudit.canonicalInteger) == key.int64(at: column)
        case .text:
            return key.withTextBytes(at: column) { text in scan.withTextBytes(at: 4) { OctetRange.equal($0, text) } }
        default:
            return false
        }
    }
}

/// Octet comparison of two buffers.
enum OctetRange {
    static func equal(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
        guard a.count == b.count else { return false }
        guard let x = a.baseAddress, let y = b.baseAddress else { return true }
        return memcmp(x, y, a.count) == 0
    }

    static func equal(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        guard a.count == b.count else { return false }
        guard let x = a.baseAddress, let y = b.baseAddress else { return true }
        return memcmp(x, y, a.count) == 0
    }
}

extension SeedBaseline {
    /// Whether internal table `name` exists with exactly the `CREATE TABLE` text the baseline writes.
    static func hasBaselineDDL(_ name: String, on connection: Connection) throws -> Bool {
        guard let expected = table(named: name)?.createSQL else { return false }
        return try connection.scalar(
            "SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = ?1", [.text(name)]
        )?.textValue == expected
    }
}
