import SQLiteKit
import SynchroProtocol
import SynchroStore

/// Server-apply writes of synced rows, row versions and scope edges (`spec/client-store.md` §9).
extension LocalRows {
    /// Whether server data must leave this row alone (`spec/client-store.md` §9, ``protectedRecordIDsSQL``).
    func isProtected(tableName: String, recordID: String) throws -> Bool {
        try connection.cachedStatement("""
            SELECT EXISTS (
                SELECT 1 FROM _synchro_pending_changes WHERE table_name = ?1 AND record_id = ?2
                    AND lifecycle_state IN \(Self.protectingStates)
            ) OR EXISTS (
                SELECT 1 FROM _synchro_rejected_mutations WHERE table_name = ?1 AND record_id = ?2
                    AND status = 'rejected_terminal' AND server_row_json IS NULL AND server_version IS NULL
            )
            """).scalar([.text(tableName), .text(recordID)])?.integerValue == 1
    }

    /// The protected rows (``protectedRecordIDsSQL``) of the tables `rows` name, read once for a page: protection
    /// changes only through the ledger, which a pull or rebuild page never writes, so one snapshot taken before
    /// the page's writes answers for each of its rows instead of a lookup per row.
    func protectedRows(of rows: some Sequence<VerifiedRow>) throws -> ProtectedRows {
        var tableNames: Set<String> = []
        for row in rows { tableNames.insert(try table(row.tableID).tableName) }
        return try protectedRows(tableNames: tableNames)
    }

    /// The protected rows of `tableNames`; tables without any are left out, so the common empty case costs one
    /// query per table and no per-row work.
    func protectedRows(tableNames: Set<String>) throws -> ProtectedRows {
        var byTable: [String: Set<String>] = [:]
        for tableName in tableNames {
            let ids = try connection.cachedStatement(Self.protectedRecordIDsSQL).rows(
                [.text(tableName), .text(tableName)])
            guard !ids.isEmpty else { continue }
            byTable[tableName] = Set(ids.compactMap { $0.first?.textValue })
        }
        return ProtectedRows(byTable: byTable)
    }

    /// A snapshot of protected rows per table name, valid while the ledger and the rejected mutations are not
    /// written (a pull or rebuild page's transaction).
    struct ProtectedRows {
        fileprivate let byTable: [String: Set<String>]

        func contains(tableName: String, recordID: String) -> Bool {
            byTable[tableName]?.contains(recordID) ?? false
        }
    }

    /// Writes a verified row (unless protected) and its row version; returns the table name and record ID.
    /// `protected` is the page's snapshot (``protectedRows(of:)``); without it protection is looked up for the row.
    @discardableResult
    func write(_ row: VerifiedRow, protected: ProtectedRows? = nil) throws -> (tableName: String, recordID: String) {
        let table = try table(row.tableID)
        let recordID = recordID(row.primaryKey)
        let isProtected = try protected.map { $0.contains(tableName: table.tableName, recordID: recordID) }
            ?? isProtected(tableName: table.tableName, recordID: recordID)
        // The scopes whose digest may read the row forget it in setVersion below (same row, same edges).
        if !isProtected {
            var positions: [Int] = []
            let values = try Self.columnValues(of: row, in: table, positions: &positions)
            try connection.cachedStatement(upserts[row.tableID] ?? Self.upsertSQL(table)).run(values)
        }
        try setVersion(
            tableName: table.tableName, recordID: recordID, version: row.serverVersion,
            checksum: try Self.checksumText(row.digest))
        return (table.tableName, recordID)
    }

    /// A verified record in the forms the store keeps: its table, record ID, column values in declaration order,
    /// row-version checksum text and edge digest hex. Computed before the page's transaction (on the thread that
    /// received the page), so that the transaction only binds and steps.
    struct StoredRecord: Sendable {
        let tableID: String
        let tableName: String
        let recordID: String
        let values: [SQLiteValue]
        let serverVersion: String
        let versionChecksum: String
        let edgeDigest: String
    }

    /// The stored forms of `records` under `manifest` (``StoredRecord``), in page order.
    static func storedRecords(_ records: [VerifiedRow], manifest: ClientManifest) throws -> [StoredRecord] {
        let tables = Dictionary(manifest.localSchema.map { ($0.tableID, $0) }, uniquingKeysWith: { first, _ in first })
        var positions: [String: [Int]] = [:]
        return try records.map { row in
            guard let table = tables[row.tableID] else { throw SyncError.invalidState(reason: "unknown table ID") }
            let values = try columnValues(of: row, in: table, positions: &positions[row.tableID, default: []])
            return StoredRecord(
                tableID: row.tableID, tableName: table.tableName, recordID: recordID(row.primaryKey), values: values,
                serverVersion: row.serverVersion, versionChecksum: try checksumText(row.digest),
                edgeDigest: Hex.encode(row.digest))
        }
    }

    /// The SQLite values of `row`'s columns of `table`, in declaration order; an absent member is NULL.
    /// `positions` remembers where each column's member was in the previous row of the table: rows of one page list
    /// their members in the same order, so one key comparison per column finds it (a search otherwise).
    static func columnValues(
        of row: VerifiedRow, in table: LocalSchemaTable, positions: inout [Int]
    ) throws -> [SQLiteValue] {
        let members = row.row.objectValue?.members ?? []
        if positions.count != table.columns.count { positions = Array(repeating: -1, count: table.columns.count) }
        var values: [SQLiteValue] = []
        values.reserveCapacity(table.columns.count)
        for (index, column) in table.columns.enumerated() {
            let guess = positions[index]
            let member: Int? =
                guess >= 0 && guess < members.count && members[guess].key.exactlyEquals(column.fieldID)
                ? guess : members.firstIndex { $0.key.exactlyEquals(column.fieldID) }
            positions[index] = member ?? -1
            values.append(try sqliteValue(member.map { members[$0].value } ?? .null, type: column.logicalType))
        }
        return values
    }

    /// Writes one rebuild page as ``write(_:protected:)`` and
    /// ``upsertEdge(scope:tableName:recordID:digest:generation:)`` do record by record — rows that `protected`
    /// names are left alone, every row version and edge (of `generation`) is upserted — in multi-row statements,
    /// in page order, one statement per table for a page of `pageLimit` records (smaller pages take statements of
    /// `pageLimit` halved, so that few distinct statements are cached).
    ///
    /// Each statement run costs a fixed setup (for a synced table, the capture triggers' program frame, a zeroed
    /// allocation of tens of kilobytes that SQLite makes per run even while capture is suppressed), and, inside the
    /// page's transaction, a statement journal: SQLite saves every page the statement changes that existed before
    /// it began, so that the statement alone can be undone (an upsert, or a synced table's `RAISE(ABORT)` capture
    /// triggers, may abort mid-way). The synced table's secondary indexes take a page's rows at random positions, so
    /// each statement journals most of their pages again: with 64-row statements a 100,000-row rebuild wrote 1.5 GB
    /// of statement journals to temporary files, with one statement per page 170 MB.
    func writeRebuildPage(
        _ records: [StoredRecord], scope: String, generation: Int64, protected: ProtectedRows, pageLimit: Int
    ) throws {
        digests?.invalidate(scope: scope)
        var byTable: [String: [String]] = [:]
        for record in records { byTable[record.tableName, default: []].append(record.recordID) }
        for (tableName, recordIDs) in byTable.sorted(by: { $0.key < $1.key }) {
            try digests?.invalidate(tableName: tableName, recordIDs: recordIDs, on: connection)
        }
        var pending: [String: [SQLiteValue]] = [:]
        for record in records where !protected.contains(tableName: record.tableName, recordID: record.recordID) {
            pending[record.tableID, default: []].append(contentsOf: record.values)
        }
        for (tableID, values) in pending.sorted(by: { $0.key < $1.key }) {
            let table = try table(tableID)
            let width = table.columns.count
            try upsert(values, width: width, limit: Self.statementRows(pageLimit, width: width)) { rows in
                Self.upsertSQL(table, rows: rows)
            }
        }
        var versions: [SQLiteValue] = []
        var edges: [SQLiteValue] = []
        versions.reserveCapacity(records.count * 4)
        edges.reserveCapacity(records.count * 5)
        for record in records {
            let (tableName, recordID) = (SQLiteValue.text(record.tableName), SQLiteValue.text(record.recordID))
            versions += [tableName, recordID, .text(record.serverVersion), .text(record.versionChecksum)]
            edges += [.text(scope), tableName, recordID, .text(record.edgeDigest), .integer(generation)]
        }
        try upsert(versions, width: 4, limit: Self.statementRows(pageLimit, width: 4), sql: Self.versionUpsertSQL)
        try upsert(edges, width: 5, limit: Self.statementRows(pageLimit, width: 5), sql: Self.edgeUpsertSQL)
    }

    /// The row-version upsert of `rows` rows.
    static func versionUpsertSQL(rows: Int) -> String {
        """
        INSERT INTO _synchro_row_versions (table_name, record_id, server_version, row_checksum)
        VALUES \(Array(repeating: "(?, ?, ?, ?)", count: max(1, rows)).joined(separator: ", "))
        ON CONFLICT (table_name, record_id)
        DO UPDATE SET server_version = excluded.server_version, row_checksum = excluded.row_checksum
        """
    }

    /// The edge upsert of `rows` rows.
    static func edgeUpsertSQL(rows: Int) -> String {
        """
        INSERT INTO _synchro_scope_rows (scope_id, table_name, record_id, checksum, generation)
        VALUES \(Array(repeating: "(?, ?, ?, ?, ?)", count: max(1, rows)).joined(separator: ", "))
        ON CONFLICT (scope_id, table_name, record_id)
        DO UPDATE SET checksum = excluded.checksum, generation = excluded.generation
        """
    }

    /// Runs the multi-row statement `sql(rows)` over `values` (`width` values per row, row after row), in
    /// statements of `limit` rows, or `limit` halved as often as the remaining rows need (so that few distinct
    /// statements are cached).
    func upsert(
        _ values: [SQLiteValue], width: Int, limit: Int, sql: (_ rows: Int) -> String
    ) throws {
        guard width > 0 else { return }
        var start = 0
        while start < values.count {
            var rows = limit
            while rows * width > values.count - start { rows /= 2 }
            try connection.cachedStatement(sql(rows)).run(Array(values[start..<(start + rows * width)]))
            start += rows * width
        }
    }

    /// `CanonicalJSON.string(Checksum(digest:).json)` of a row digest, written out directly (RFC 8785 orders the
    /// members algorithm, digest, encoding, version) instead of building and serializing a JSON object per row.
    static func checksumText(_ digest: [UInt8]) throws -> String {
        let hex = try Checksum(digest: digest).hex
        return #"{"algorithm":"sha256","digest":""# + hex + #"","encoding":"hex","version":1}"#
    }

    func setVersion(tableName: String, recordID: String, version: String, checksum: String?) throws {
        try digests?.invalidate(tableName: tableName, recordID: recordID, on: connection)
        try connection.cachedStatement("""
            INSERT INTO _synchro_row_versions (table_name, record_id, server_version, row_checksum)
            VALUES (?, ?, ?, ?)
            ON CONFLICT (table_name, record_id)
            DO UPDATE SET server_version = excluded.server_version, row_checksum = excluded.row_checksum
            """).run([.text(tableName), .text(recordID), .text(version), checksum.map(SQLiteValue.text) ?? .null])
    }

    func upsertEdge(scope: String, tableName: String, recordID: String, digest: [UInt8], generation: Int64) throws {
        digests?.invalidate(scope: scope)
        try connection.cachedStatement("""
            INSERT INTO _synchro_scope_rows (scope_id, table_name, record_id, checksum, generation)
            VALUES (?, ?, ?, ?, ?)
            ON CONFLICT (scope_id, table_name, record_id)
            DO UPDATE SET checksum = excluded.checksum, generation = excluded.generation
            """).run([.text(scope), .text(tableName), .text(recordID), .text(Hex.encode(digest)), .integer(generation)])
    }

    func removeEdge(scope: String, tableName: String, recordID: String) throws {
        digests?.invalidate(scope: scope)
        try connection.cachedStatement(
            "DELETE FROM _synchro_scope_rows WHERE scope_id = ? AND table_name = ? AND record_id = ?"
        ).run([.text(scope), .text(tableName), .text(recordID)])
    }

    /// Deletes the local row when no scope justifies it and no unresolved intent protects it; never creates a
    /// mutation (capture is suppressed) or a tombstone.
    func deleteIfOrphaned(tableName: String, recordID: String) throws {
        let justified = try connection.cachedStatement(
            "SELECT 1 FROM _synchro_scope_rows WHERE table_name = ? AND record_id = ? LIMIT 1"
        ).scalar([.text(tableName), .text(recordID)]) != nil
        guard !justified, try !isProtected(tableName: tableName, recordID: recordID) else { return }
        guard let table = tables.values.first(where: { $0.tableName == tableName }),
            let key = table.primaryKeyColumn
        else { return }
        try digests?.invalidate(tableName: tableName, recordID: recordID, on: connection)
        try connection.cachedStatement(
            "DELETE FROM \(SQLiteIdentifier.quote(tableName)) WHERE \(SQLiteIdentifier.quote(key.name)) = ?"
        ).run([LocalStorageForm.keyValue(recordID: recordID, type: key.logicalType)])
    }

    /// Deletes edges of `scope` (all, or those of other generations) and then the rows they leave orphaned.
    func dropEdges(scope: String, keepingGeneration generation: Int64? = nil) throws {
        let filter = generation == nil ? "" : " AND generation <> ?"
        let arguments: [SQLiteValue] = [.text(scope)] + (generation.map { [.integer($0)] } ?? [])
        let dropped = try connection.query(
            "SELECT table_name, record_id FROM _synchro_scope_rows WHERE scope_id = ?\(filter)", arguments
        ) { (try $0.text(at: 0), try $0.text(at: 1)) }
        // The same filter in the same transaction: nothing selected, nothing deleted, no digest changed.
        guard !dropped.isEmpty else { return }
        digests?.invalidate(scope: scope)
        try connection.run("DELETE FROM _synchro_scope_rows WHERE scope_id = ?\(filter)", arguments)
        for (tableName, recordID) in dropped {
            try deleteIfOrphaned(tableName: tableName, recordID: recordID)
        }
    }
}
