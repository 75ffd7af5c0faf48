import SQLiteKit
import SynchroStore
import SynchroProtocol

/// Server-apply writes of synced rows, row versions and provenance on the engine connection, plus the local
/// scope digest (`spec/client-store.md` §9). Runs only inside a server-apply transaction.
struct LocalRows {
    let connection: Connection
    let manifest: SchemaManifest
    private let tables: [String: LocalSchemaTable]

    /// Unresolved ledger states that protect a row from server data (`spec/client-store.md` §9).
    static let protectingStates = "('unsealed', 'sealed', 'blocked_by_predecessor', 'legacy_blocked')"

    /// The record IDs of one table (its name bound to both `?`) that are protected rows (`spec/client-store.md`
    /// §9): an unresolved ledger entry in a protecting state, or a retained `rejected_terminal` rejection without
    /// server row and server version. A terminal rejection describes no server state (client contract,
    /// "Conflict and terminal outcomes"), so the local row it left stays until policy clears the rejection
    /// (``SynchroDatabase/clearRejectedMutationRecords(_:)``); a conflict carries the server's state and
    /// protects nothing.
    static let protectedRecordIDsSQL = """
        SELECT record_id FROM _synchro_pending_changes
        WHERE table_name = ? AND lifecycle_state IN \(protectingStates)
        UNION
        SELECT record_id FROM _synchro_rejected_mutations
        WHERE table_name = ? AND status = 'rejected_terminal' AND server_row_json IS NULL AND server_version IS NULL
        """

    /// The upsert of each table's synced columns, by table ID: built once, not per written row.
    private let upserts: [String: String]
    /// The scope digest memo of the tracked server-apply transaction on this connection, if one is running: each
    /// write below forgets the digests that may read what it changes, ``scopeDigest(scope:)`` consults it.
    private let digests: ScopeDigestMemo.Session?

    init(connection: Connection, manifest: ClientManifest) {
        self.connection = connection
        self.manifest = manifest.manifest
        var tables: [String: LocalSchemaTable] = [:]
        var upserts: [String: String] = [:]
        for table in manifest.localSchema {
            tables[table.tableID] = table
            upserts[table.tableID] = Self.upsertSQL(table)
        }
        self.tables = tables
        self.upserts = upserts
        digests = ScopeDigestMemo.Session.current.flatMap { $0.covers(connection) ? $0 : nil }
    }

    /// `INSERT … ON CONFLICT (key) DO UPDATE` of every column of `table` for `rows` rows, values bound in column
    /// order, row after row. SQLite applies the rows of one statement in order, each as its own upsert.
    private static func upsertSQL(_ table: LocalSchemaTable, rows: Int = 1) -> String {
        let names = table.columns.map { SQLiteIdentifier.quote($0.name) }
        let key = SQLiteIdentifier.quote(table.primaryKeyColumn?.name ?? "id")
        let updates = names.filter { $0 != key }.map { "\($0) = excluded.\($0)" }
        let conflict = updates.isEmpty ? "DO NOTHING" : "DO UPDATE SET \(updates.joined(separator: ", "))"
        let tuple = "(\(Array(repeating: "?", count: names.count).joined(separator: ", ")))"
        return """
            INSERT INTO \(SQLiteIdentifier.quote(table.tableName)) (\(names.joined(separator: ", ")))
            VALUES \(Array(repeating: tuple, count: max(1, rows)).joined(separator: ", "))
            ON CONFLICT (\(key)) \(conflict)
            """
    }

    /// Most rows of one multi-row statement of `width` values per row: `rows`, halved while SQLite could not bind
    /// them all (it binds at most 32,766 values).
    private static func statementRows(_ rows: Int, width: Int) -> Int {
        var limit = max(1, rows)
        while limit > 1, limit * max(1, width) > 32_766 { limit /= 2 }
        return limit
    }

    /// Loads the active manifest from `_synchro_meta`; throws when the store has no schema.
    static func activeManifest(on connection: Connection) throws -> ClientManifest {
        guard let text = try MetaStore.value(.schemaManifest, on: connection), !text.isEmpty else {
            throw SyncError.invalidState(reason: "the store has no active schema")
        }
        return try ClientManifest(bytes: Array(text.utf8))
    }

    func table(_ tableID: String) throws -> LocalSchemaTable {
        guard let table = tables[tableID] else { throw SyncError.invalidState(reason: "unknown table ID") }
        return table
    }

    /// `record_id`: the primary key rendered as text (`CAST(pk AS TEXT)`).
    func recordID(_ primaryKey: JSONValue) -> String {
        Self.recordID(primaryKey)
    }

    static func recordID(_ primaryKey: JSONValue) -> String {
        switch primaryKey {
        case .number(let number): number.exactInt64.map(String.init) ?? number.literal
        case .string(let string): string
        default: ""
        }
    }

    // MARK: - Writes

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
    private static func versionUpsertSQL(rows: Int) -> String {
        """
        INSERT INTO _synchro_row_versions (table_name, record_id, server_version, row_checksum)
        VALUES \(Array(repeating: "(?, ?, ?, ?)", count: max(1, rows)).joined(separator: ", "))
        ON CONFLICT (table_name, record_id)
        DO UPDATE SET server_version = excluded.server_version, row_checksum = excluded.row_checksum
        """
    }

    /// The edge upsert of `rows` rows.
    private static func edgeUpsertSQL(rows: Int) -> String {
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
    private func upsert(
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

    // MARK: - Scope digest

    /// What recomputing one scope from local state found (`spec/client-store.md` §9, "Scope digest
    /// recomputation"). Counts per table only: never keys or values.
    ///
    /// With `detailed`, every unprotected edge is also classified against the row's last authoritative state
    /// (`_synchro_row_versions.row_checksum`, written by pull, rebuild and push reconciliation alike): a row that
    /// no longer yields that digest, or that the metadata says exists but is gone, is damage; an edge whose
    /// digest predates a later authoritative change (an accepted push applied before its pull echo) is stale.
    struct ScopeAudit {
        /// The recomputed scope checksum.
        var checksum: Checksum
        /// Rows whose recomputed digest differs from their last authoritative digest, per table name.
        var mismatchedRows: [String: Int] = [:]
        /// Edges whose row or server version is missing although nothing authoritative removed it, per table.
        var missingRows: [String: Int] = [:]
        /// Edges that a later authoritative change made stale; the stored scope checksum awaits the next pull.
        var staleEdges = 0
    }

    /// Recomputes the scope digest from local state: protected rows contribute their stored edge digest; other
    /// rows are re-read, converted to wire values and digested with their stored server version. Inside a tracked
    /// server apply, the value computed earlier over provably the same state is reused (``ScopeDigestMemo``).
    ///
    /// With `check` (rebuild finality), rows it read back beside the engine after their last write contribute the
    /// digest it computed, when it still vouches for the state (``RebuildRowCheck``).
    func scopeDigest(scope: String, check: RebuildRowCheck? = nil) throws -> Checksum {
        guard let digests else { return try recomputedScopeDigest(scope: scope, check: check) }
        return try digests.digest(scope: scope, on: connection, manifest: manifest) {
            try recomputedScopeDigest(scope: scope, check: check)
        }
    }

    private func recomputedScopeDigest(scope: String, check: RebuildRowCheck?) throws -> Checksum {
        if let check, let checksum = try checkedScopeDigest(scope: scope, check: check) { return checksum }
        if let checksum = try streamedScopeDigest(scope: scope) { return checksum }
        return try audit(scope: scope, detailed: false).checksum
    }

    /// Most rows ``checkedScopeDigest(scope:check:)`` reads itself before it leaves the scope to
    /// ``streamedScopeDigest(scope:)`` (a resumed attempt whose earlier pages were applied before the check began).
    private static let checkedScopeReadLimit = 4096

    /// The scope digest with each unprotected row's digest taken from `check` when it read the row back after its
    /// last write, and read here otherwise (the final page's rows, in this transaction). Nil when `check` does not
    /// vouch for the state (another connection committed since it began, another manifest) or when the rows read
    /// here would be many or one of them cannot be digested this way; the caller then recomputes every row.
    private func checkedScopeDigest(scope: String, check: RebuildRowCheck) throws -> Checksum? {
        guard !check.gaveUp, check.manifest.reference.hash == manifest.schemaHash,
            try connection.cachedStatement("PRAGMA data_version").scalar()?.integerValue == check.dataVersion
        else { return nil }
        check.drain()
        guard var accumulator = try accumulator(scope: scope) else { return nil }
        var digester = StoredRowDigester(manifest: manifest)
        var readHere = 0
        for table in tablesInIdentityOrder {
            guard let key = table.primaryKeyColumn, let order = Self.identityOrder(key.logicalType),
                let layout = digester.layout(for: table)
            else { return nil }
            guard let protected = protectedRecordIDs(of: table) else { return nil }
            let edges = try connection.prepare("""
                SELECT record_id, checksum FROM _synchro_scope_rows WHERE scope_id = ? AND table_name = ?
                ORDER BY \(order)
                """)
            try edges.bind([.text(scope), .text(table.tableName)])
            defer { edges.reset() }
            let read = try connection.cachedStatement(Self.recordCheckSQL(table, key: key))
            while try edges.step() {
                let recordID = try edges.text(at: 0)
                let entry: (identity: RowIdentity, digest: [UInt8])
                if protected.contains(recordID) {
                    entry = (try identity(table, key, recordID), Hex.decode(try edges.text(at: 1)) ?? [])
                } else if let digest = check.digest(tableName: table.tableName, recordID: recordID) {
                    entry = (try identity(table, key, recordID), digest)
                } else {
                    readHere += 1
                    guard readHere <= Self.checkedScopeReadLimit,
                        let row = try Self.checkedRow(
                            read, recordID: recordID, key: key, tableName: table.tableName, layout: layout,
                            digester: &digester)
                    else { return nil }
                    entry = row
                }
                guard (try? accumulator.add(identity: entry.identity, rowDigest: entry.digest)) != nil else {
                    return nil
                }
            }
        }
        return try Self.checksum(of: accumulator)
    }

    /// The streaming scope digest of `scope`, declared with its edge count; nil when that cannot be read.
    private func accumulator(scope: String) throws -> ScopeDigestAccumulator? {
        guard let cardinality = try connection.cachedStatement(
            "SELECT count(*) FROM _synchro_scope_rows WHERE scope_id = ?"
        ).scalar([.text(scope)])?.integerValue, cardinality >= 0
        else { return nil }
        return try? ScopeDigestAccumulator(
            schemaHash: manifest.schemaHashOctets, scopeID: scope, cardinality: UInt64(cardinality))
    }

    /// The protected record IDs of `table` at once (a handful: local intents), not one query per edge.
    private func protectedRecordIDs(of table: LocalSchemaTable) -> Set<String>? {
        try? Set(connection.query(Self.protectedRecordIDsSQL, [.text(table.tableName), .text(table.tableName)]) {
            try $0.text(at: 0)
        })
    }

    /// The row identity of `recordID` in `table`, from the record ID (protected rows, rows digested elsewhere).
    private func identity(
        _ table: LocalSchemaTable, _ key: LocalSchemaColumn, _ recordID: String
    ) throws -> RowIdentity {
        let primaryKey = LocalStorageForm.keyJSON(recordID: recordID, type: key.logicalType)
        return try RowIdentity(manifest: manifest, tableID: table.tableID, primaryKey: primaryKey)
    }

    /// The scope checksum `accumulator` gives, or nil when it refuses (an edge count that does not match).
    private static func checksum(of accumulator: consuming ScopeDigestAccumulator) throws -> Checksum? {
        guard let digest = try? accumulator.finalize() else { return nil }
        return try Checksum(digest: digest)
    }

    /// The synced tables in row-identity order: identities of two tables first differ in text(table_id), its
    /// length, then its octets.
    private var tablesInIdentityOrder: [LocalSchemaTable] {
        tables.values.sorted { first, second in
            let (a, b) = (first.tableID.utf8, second.tableID.utf8)
            return a.count != b.count ? a.count < b.count : a.lexicographicallyPrecedes(b)
        }
    }

    /// One row of `table` by record ID, for digesting from its stored values: `?1` the key's SQLite value, `?2` the
    /// record ID, `?3` the table name. Column 0 says whether the record ID is the canonical text of the stored
    /// key, column 1 is the row version's server version, the row's columns follow in declaration order.
    static func recordCheckSQL(_ table: LocalSchemaTable, key: LocalSchemaColumn) -> String {
        let columns = table.columns.map { "t." + SQLiteIdentifier.quote($0.name) }.joined(separator: ", ")
        let keyColumn = "t." + SQLiteIdentifier.quote(key.name)
        return """
            SELECT CAST(\(keyColumn) AS TEXT) = ?2, v.server_version, \(columns)
            FROM \(SQLiteIdentifier.quote(table.tableName)) AS t
            JOIN _synchro_row_versions AS v ON v.table_name = ?3 AND v.record_id = ?2
            WHERE \(keyColumn) = ?1
            """
    }

    /// The identity and digest of the row `recordID` through a ``recordCheckSQL(_:key:)`` statement; nil when the
    /// row or its version is missing, the record ID is not its key's canonical text, or a value is not in a form
    /// ``StoredRowDigester`` vouches for.
    static func checkedRow(
        _ statement: Statement, recordID: String, key: LocalSchemaColumn, tableName: String,
        layout: StoredRowLayout, digester: inout StoredRowDigester
    ) throws -> (identity: RowIdentity, digest: [UInt8])? {
        try statement.bind([LocalStorageForm.keyValue(recordID: recordID, type: key.logicalType), .text(recordID), .text(tableName)])
        defer { statement.reset() }
        guard try statement.step(), statement.int64(at: 0) == 1, statement.storageClass(at: 1) == .text else {
            return nil
        }
        return statement.withTextBytes(at: 1) { serverVersion in
            digester.digest(layout, serverVersion: serverVersion) { column, value in
                statement.store(column: 2 + column, into: &value)
            }
        }
    }

    /// ``scopeDigest(scope:)`` computed while SQLite reads the edges in row-identity order, so that one row is
    /// held at a time instead of the scope (`spec/integrity.md` §4.6: streaming SHA-256 in identity order). One
    /// query per table joins each edge with its row and its row version, and each unprotected row is digested
    /// straight from its stored values (``StoredRowDigester``). Nil whenever that might not equal the complete
    /// computation — an edge without its row or version, a record ID that is not its key's canonical text, a
    /// value that path does not vouch for, an unknown table, an identity out of order or repeated — and the
    /// caller then runs ``audit(scope:detailed:)``, which decides.
    private func streamedScopeDigest(scope: String) throws -> Checksum? {
        guard var accumulator = try accumulator(scope: scope) else { return nil }
        var digester = StoredRowDigester(manifest: manifest)
        for table in tablesInIdentityOrder {
            guard let key = table.primaryKeyColumn, let order = Self.identityOrder(key.logicalType),
                let layout = digester.layout(for: table)
            else { return nil }
            guard let protected = protectedRecordIDs(of: table) else { return nil }
            let statement = try connection.cachedStatement(Self.streamedEdgesSQL(table, key: key, order: order))
            try statement.bind([.text(scope), .text(table.tableName)])
            defer { statement.reset() }
            while try statement.step() {
                let entry: (identity: RowIdentity, digest: [UInt8])?
                let recordID = try statement.text(at: 0)
                if protected.contains(recordID) {
                    entry = (try identity(table, key, recordID), Hex.decode(try statement.text(at: 1)) ?? [])
                } else {
                    entry = Self.storedEntry(statement, layout: layout, digester: &digester)
                }
                guard let entry else { return nil }
                guard (try? accumulator.add(identity: entry.identity, rowDigest: entry.digest)) != nil else {
                    return nil
                }
            }
        }
        return try Self.checksum(of: accumulator)
    }

    /// The edges of one scope (`?1`) and table (`?2`) in row-identity order, each with whether its row matches
    /// it exactly (column 2: 1 when the row exists under the canonical text of its key), the row version's
    /// server version (column 3) and the row's columns in declaration order (from column 4).
    private static func streamedEdgesSQL(_ table: LocalSchemaTable, key: LocalSchemaColumn, order: String) -> String {
        let columns = table.columns.map { "t." + SQLiteIdentifier.quote($0.name) }.joined(separator: ", ")
        let keyColumn = "t." + SQLiteIdentifier.quote(key.name)
        let match: String
        switch key.logicalType {
        case .int, .int64:
            match = "\(keyColumn) = CAST(e.record_id AS INTEGER) AND CAST(\(keyColumn) AS TEXT) = e.record_id"
        default:
            match = "\(keyColumn) = e.record_id"
        }
        // The edges are ordered first and materialized, so that SQLite sorts the narrow edges, not the joined rows,
        // and the nested loops keep their order (the accumulator refuses any other). `LIMIT -1` keeps the ORDER BY:
        // without a limit, SQLite 3.40+ may drop the ORDER BY of a subquery.
        return """
            WITH e AS MATERIALIZED (
                SELECT record_id, checksum FROM _synchro_scope_rows WHERE scope_id = ?1 AND table_name = ?2
                ORDER BY \(order) LIMIT -1)
            SELECT e.record_id, e.checksum, \(keyColumn) IS NOT NULL, v.server_version, \(columns)
            FROM e
            LEFT JOIN \(SQLiteIdentifier.quote(table.tableName)) AS t ON \(match)
            LEFT JOIN _synchro_row_versions AS v ON v.table_name = ?2 AND v.record_id = e.record_id
            """
    }

    /// The identity and digest of the unprotected row on the current row of a ``streamedEdgesSQL(_:key:order:)``
    /// statement, digested from its stored values with its server version; nil when the row or its version is
    /// missing or a value is not in a form ``StoredRowDigester`` vouches for.
    private static func storedEntry(
        _ statement: Statement, layout: StoredRowLayout, digester: inout StoredRowDigester
    ) -> (identity: RowIdentity, digest: [UInt8])? {
        guard statement.int64(at: 2) == 1, statement.storageClass(at: 3) == .text else { return nil }
        return statement.withTextBytes(at: 3) { serverVersion in
            digester.digest(layout, serverVersion: serverVersion) { column, value in
                statement.store(column: 4 + column, into: &value)
            }
        }
    }

    /// `ORDER BY` of `record_id` that lists a table's keys of `type` in row-identity octet order (§4.3): integers
    /// by their two's complement big-endian octets (non-negative before negative), strings by text(s) (octet
    /// length, then octets). Nil for a type that cannot be a key.
    private static func identityOrder(_ type: PortableType) -> String? {
        switch type {
        case .int, .int64: "CAST(record_id AS INTEGER) < 0, CAST(record_id AS INTEGER)"
        case .string: "length(CAST(record_id AS BLOB)), CAST(record_id AS BLOB)"
        default: nil
        }
    }

    /// Recomputes the scope digest and, when `detailed`, classifies every unprotected edge.
    func audit(scope: String, detailed: Bool) throws -> ScopeAudit {
        let edges = try connection.query(
            "SELECT table_name, record_id, checksum FROM _synchro_scope_rows WHERE scope_id = ?", [.text(scope)]
        ) { (try $0.text(at: 0), try $0.text(at: 1), try $0.text(at: 2)) }
        var digester = RowDigester(manifest: manifest)
        var entries: [(identity: RowIdentity, rowDigest: [UInt8])] = []
        entries.reserveCapacity(edges.count)
        var audit = ScopeAudit(checksum: try Checksum(digest: Array(repeating: 0, count: 32)))
        let byName = Dictionary(tables.values.map { ($0.tableName, $0) }, uniquingKeysWith: { first, _ in first })
        for (tableName, recordID, edgeHex) in edges {
            guard let table = byName[tableName], let key = table.primaryKeyColumn else {
                throw SyncError.invalidState(reason: "provenance names an unknown table")
            }
            let edgeDigest = Hex.decode(edgeHex) ?? []
            let columns = table.columns.map { SQLiteIdentifier.quote($0.name) }.joined(separator: ", ")
            // The typed key lets SQLite use the primary-key index instead of scanning the table per edge.
            let stored = try connection.cachedStatement(
                "SELECT \(columns) FROM \(SQLiteIdentifier.quote(tableName)) "
                    + "WHERE \(SQLiteIdentifier.quote(key.name)) = ?"
            ).rows([LocalStorageForm.keyValue(recordID: recordID, type: key.logicalType)]).first
            let versionRow = try connection.cachedStatement(
                "SELECT server_version, row_checksum FROM _synchro_row_versions WHERE table_name = ? AND record_id = ?"
            ).rows([.text(tableName), .text(recordID)]).first
            let version = versionRow?[0].textValue
            let primaryKey = LocalStorageForm.keyJSON(recordID: recordID, type: key.logicalType)
            if try isProtected(tableName: tableName, recordID: recordID) {
                // Local intent keeps the row different on purpose: the server's digest stands for it.
                let identity = try RowIdentity(manifest: manifest, tableID: table.tableID, primaryKey: primaryKey)
                entries.append((identity, edgeDigest))
                continue
            }
            let authoritative = detailed ? versionRow?[1].textValue.flatMap(Self.checksumDigest) : nil
            // An unprotected edge without its row or version cannot verify: leaving it out changes the
            // cardinality, so the scope mismatches and is rebuilt.
            guard let stored, let version else {
                if detailed {
                    if stored != nil || authoritative != nil {
                        audit.missingRows[tableName, default: 0] += 1
                    } else {
                        audit.staleEdges += 1
                    }
                }
                continue
            }
            var members: [JSONMember] = []
            for (column, value) in zip(table.columns, stored) {
                members.append(JSONMember(column.fieldID, LocalStorageForm.wireValue(value, type: column.logicalType) ?? .null))
            }
            let computed: (identity: RowIdentity, digest: [UInt8])
            do {
                computed = try digester.digest(
                    tableID: table.tableID, primaryKey: primaryKey, row: .object(JSONObject(members)),
                    serverVersion: version)
            } catch {
                // A stored value the manifest cannot digest (a damaged row) cannot verify either.
                if detailed { audit.mismatchedRows[tableName, default: 0] += 1 }
                continue
            }
            if detailed {
                if let authoritative, computed.digest != authoritative {
                    audit.mismatchedRows[tableName, default: 0] += 1
                } else if computed.digest != edgeDigest {
                    audit.staleEdges += 1
                }
            }
            entries.append((computed.identity, computed.digest))
        }
        audit.checksum = try ScopeDigest.compute(
            schemaHash: manifest.schemaHashOctets, scopeID: scope, entries: entries
        ).checksum
        return audit
    }

    /// The digest octets of a stored ChecksumObject, nil when it is not one.
    private static func checksumDigest(_ text: String) -> [UInt8]? {
        (try? Checksum(json: StrictJSONParser().parse(Array(text.utf8))))?.digest
    }

    // MARK: - Value conversion

    /// The SQLite value of a wire value of `type` (`spec/client-store.md` §5.2 storage classes).
    static func sqliteValue(_ value: JSONValue, type: PortableType) throws -> SQLiteValue {
        guard let stored = LocalStorageForm.sqliteValue(value, type: type) else {
            throw SyncError.invalidState(reason: "a verified value has no local storage form")
        }
        return stored
    }
}
