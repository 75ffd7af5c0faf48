import SQLiteKit
import SynchroProtocol
import SynchroStore

/// The local scope digest (`spec/client-store.md` §9, "Scope digest recomputation"): the entry point, the memo,
/// and the digest checked against a rebuild's rows.
extension LocalRows {
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
    /// With `check` (rebuild finality), rows it read back beside the engine and matched with their edge contribute
    /// their stored edge digest, when it still vouches for the state (``RebuildRowCheck``).
    ///
    /// A steady verification inside a tracked server apply (no `check`) reads the stored digest entries of the scope
    /// when they are current (``StoredScopeDigests``), re-digesting only rows changed since; otherwise it recomputes
    /// every row and rewrites the entries.
    func scopeDigest(scope: String, check: RebuildRowCheck? = nil) throws -> Checksum {
        guard let digests else { return try recomputedScopeDigest(scope: scope, check: check) }
        guard check == nil else {
            return try digests.digest(scope: scope, on: connection, manifest: manifest) {
                try recomputedScopeDigest(scope: scope, check: check)
            }
        }
        return try digests.digest(scope: scope, on: connection, manifest: manifest) {
            // Only when the memo cannot answer (an initial sync's terminal pull reuses finality's digest and creates
            // nothing); the layout's DDL changes the stamp, so the stamp is taken after it.
            if try !StoredScopeDigests.isInstalled(on: connection) {
                try connection.execute(StoredScopeDigests.layout)
            }
            let stamp = try ScopeDigestMemo.Stamp(connection: connection, manifest: manifest)
            let stored = StoredScopeDigests(rows: self, session: digests)
            if let checksum = try stored.storedDigest(scope: scope, stamp: stamp) { return checksum }
            var streamed: Checksum?
            let rewritten = try StoredScopeDigests.rewrite(scope: scope, on: connection) { store in
                streamed = try streamedScopeDigest(scope: scope, store: store)
                return streamed != nil
            }
            if rewritten, let streamed {
                digests.storedEntriesRewritten(scope: scope, stamp: stamp)
                return streamed
            }
            try StoredScopeDigests.forget(scope: scope, on: connection)
            return try audit(scope: scope, detailed: false).checksum
        }
    }

    func recomputedScopeDigest(scope: String, check: RebuildRowCheck?) throws -> Checksum {
        if let check, let checksum = try checkedScopeDigest(scope: scope, check: check) { return checksum }
        if let checksum = try streamedScopeDigest(scope: scope) { return checksum }
        return try audit(scope: scope, detailed: false).checksum
    }

    /// The scope digest with each unprotected row that `check` read back and matched with its edge after its page
    /// committed contributing that stored edge digest, and the final page's rows read here, in this transaction.
    /// Nil when `check` does not vouch for the state (a row that did not match, another connection committed since
    /// it began, another manifest, an edge count other than the rows it saw written: a row written twice or before
    /// the check began) or when a row read here cannot be digested this way; the caller then recomputes every row.
    func checkedScopeDigest(scope: String, check: RebuildRowCheck) throws -> Checksum? {
        guard check.scope == scope, check.manifest.reference.hash == manifest.schemaHash,
            try connection.cachedStatement("PRAGMA data_version").scalar()?.integerValue == check.dataVersion,
            let vouched = check.vouched(), let cardinality = try edgeCount(scope: scope),
            cardinality == vouched.committedRows + vouched.pendingCount,
            var accumulator = try? ScopeDigestAccumulator(
                schemaHash: manifest.schemaHashOctets, scopeID: scope, cardinality: UInt64(cardinality))
        else { return nil }
        var digester = StoredRowDigester(manifest: manifest)
        for table in tablesInIdentityOrder {
            guard let key = table.primaryKeyColumn, let order = Self.identityOrder(key.logicalType),
                let layout = digester.layout(for: table)
            else { return nil }
            guard let protected = protectedRecordIDs(of: table) else { return nil }
            let readHere = vouched.pendingRows[table.tableName] ?? []
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
                if protected.contains(recordID) || !readHere.contains(recordID) {
                    entry = (try identity(table, key, recordID), Hex.decode(try edges.text(at: 1)) ?? [])
                } else {
                    guard let row = try Self.checkedRow(
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

    /// The number of edges of `scope`; nil when that cannot be read.
    func edgeCount(scope: String) throws -> Int? {
        guard let count = try connection.cachedStatement(
            "SELECT count(*) FROM _synchro_scope_rows WHERE scope_id = ?"
        ).scalar([.text(scope)])?.integerValue, count >= 0
        else { return nil }
        return Int(count)
    }

    /// The streaming scope digest of `scope`, declared with its edge count; nil when that cannot be read.
    func accumulator(scope: String) throws -> ScopeDigestAccumulator? {
        guard let cardinality = try edgeCount(scope: scope) else { return nil }
        return try? ScopeDigestAccumulator(
            schemaHash: manifest.schemaHashOctets, scopeID: scope, cardinality: UInt64(cardinality))
    }

    /// The protected record IDs of `table` at once (a handful: local intents), not one query per edge.
    func protectedRecordIDs(of table: LocalSchemaTable) -> Set<String>? {
        try? Set(connection.query(Self.protectedRecordIDsSQL, [.text(table.tableName), .text(table.tableName)]) {
            try $0.text(at: 0)
        })
    }

    /// The row identity of `recordID` in `table`, from the record ID (protected rows, rows digested elsewhere).
    func identity(
        _ table: LocalSchemaTable, _ key: LocalSchemaColumn, _ recordID: String
    ) throws -> RowIdentity {
        let primaryKey = LocalStorageForm.keyJSON(recordID: recordID, type: key.logicalType)
        return try RowIdentity(manifest: manifest, tableID: table.tableID, primaryKey: primaryKey)
    }

    /// The scope checksum `accumulator` gives, or nil when it refuses (an edge count that does not match).
    static func checksum(of accumulator: consuming ScopeDigestAccumulator) throws -> Checksum? {
        guard let digest = try? accumulator.finalize() else { return nil }
        return try Checksum(digest: digest)
    }

    /// The synced tables in row-identity order: identities of two tables first differ in text(table_id), its
    /// length, then its octets.
    var tablesInIdentityOrder: [LocalSchemaTable] {
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
}
