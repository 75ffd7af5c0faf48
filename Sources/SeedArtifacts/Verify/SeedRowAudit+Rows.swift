import SQLiteKit
import SynchroStore
import SynchroProtocol

extension SeedRowAudit {
    func readRows(
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
            if rowid == rows.lastRowid {
                collector.add(checks.rowVersion, table: table.tableName, row: Int64(rows.count),
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
            rows.append(rowid: rowid, digested: false)
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
            rows.append(rowid: rowid, digested: false)
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
            rows.append(rowid: rowid, digested: false)
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
        rows.append(rowid: rowid, digested: true)
        let checksum = version.rowChecksum
        let matches = version.statement.isNull(at: checksum) ? nil : version.statement.withTextBytes(
            at: checksum) { ChecksumText.object($0, carries: digest) }
        guard matches != true else { return }
        let ordinal = Int64(position + 1)
        rows.differingDigests[position] = Array(digest)
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
}
