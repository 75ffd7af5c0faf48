import SQLiteKit
import SynchroProtocol
import SynchroStore

/// What the edge pass learned of one scope, for its digest: nothing per edge.
struct ScopeEdges {
    /// Edges of the scope that name a materialized row: the scope digest's cardinality.
    var members = 0
    /// The tables (indexes into the audit's tables) the scope has members in.
    var tables: Set<UInt32> = []
    /// Tables whose edges in the scope cannot each stand for their row (an edge naming no row or carrying another
    /// digest than its row's, a row whose recomputed digest is unknown or differs from its version's): their digest
    /// entries are read beside the rows.
    var exactTables: Set<UInt32> = []

    mutating func merge(_ other: ScopeEdges) {
        members += other.members
        tables.formUnion(other.tables)
        exactTables.formUnion(other.exactTables)
    }
}

extension SeedRowAudit {
    /// The scope's tally: its edge count, and its digest streamed through ``ScopeDigestAccumulator`` in row-identity
    /// order from SQL, table after table (`spec/integrity.md` §4.6), as the client streams its own (issue #21): no
    /// record of the scope's rows is kept. An edge whose row passed every check carries the row's recomputed digest
    /// (the edge pass compared it with the row version's, which the row pass compared with the recomputed one), and
    /// its record ID gives the row's identity; a table where that does not hold for some edge
    /// (``ScopeEdges/exactTables``) is read beside its rows and their versions instead. As
    /// ``ScopeDigest/compute(schemaHash:scopeID:entries:)`` would, an edge whose row has no identity or digest, or
    /// two edges of one identity, leave the digest unknown.
    func tally(scope: String, edges: ScopeEdges, tables: [AuditedRows]) throws -> ScopeTally {
        var tally = ScopeTally(edges: edges.members)
        guard var accumulator = try? ScopeDigestAccumulator(
            schemaHash: manifest.manifest.schemaHashOctets, scopeID: scope, cardinality: UInt64(edges.members))
        else { return tally }
        for index in Self.identityOrder(tables) where edges.tables.contains(UInt32(index)) {
            let rows = tables[index]
            guard let order = Self.edgeOrder(rows.key.logicalType) else { return tally }
            let fed = edges.exactTables.contains(UInt32(index))
                ? try feedFromRows(scope: scope, rows, order: order, into: &accumulator)
                : try feedFromEdges(scope: scope, rows, order: order, into: &accumulator)
            guard fed else { return tally }
        }
        tally.digest = try? accumulator.finalize()
        return tally
    }

    /// Each edge of `scope` in `rows`' table, in identity order, with the digest it carries; false when one cannot
    /// be added (the digest is then unknown).
    private func feedFromEdges(
        scope: String, _ rows: AuditedRows, order: String, into accumulator: inout ScopeDigestAccumulator
    ) throws -> Bool {
        let statement = try connection.prepare("""
            SELECT record_id, checksum FROM _synchro_scope_rows WHERE scope_id = ?1 AND table_name = ?2
            ORDER BY \(order)
            """)
        try statement.bind([.text(scope), .text(rows.table.tableName)])
        defer { statement.reset() }
        while try statement.step() {
            guard let identity = try identity(rows, recordID: statement.text(at: 0)),
                  let digest = statement.withTextBytes(at: 1, ChecksumText.bareDigest),
                  (try? accumulator.add(identity: identity, rowDigest: digest)) != nil
            else { return false }
        }
        return true
    }

    /// Each edge of `scope` in `rows`' table that names a materialized row, in identity order, with the row's
    /// recomputed digest: the one kept when it differs from its version's, else its version's.
    private func feedFromRows(
        scope: String, _ rows: AuditedRows, order: String, into accumulator: inout ScopeDigestAccumulator
    ) throws -> Bool {
        let key = "t." + SQLiteIdentifier.quote(rows.key.name)
        // The edges are ordered first and materialized so that the narrow edges are sorted and the nested loops keep
        // their order; `LIMIT -1` keeps the subquery's ORDER BY.
        let statement = try connection.prepare("""
            WITH e AS MATERIALIZED (
                SELECT record_id FROM _synchro_scope_rows WHERE scope_id = ?1 AND table_name = ?2
                ORDER BY \(order) LIMIT -1)
            SELECT e.record_id, t.rowid,
                (SELECT v.row_checksum FROM _synchro_row_versions AS v
                 WHERE v.table_name = ?2 AND v.record_id = e.record_id ORDER BY v.rowid LIMIT 1)
            FROM e LEFT JOIN \(SQLiteIdentifier.quote(rows.table.tableName)) AS t
                ON \(key) = e.record_id AND CAST(\(key) AS TEXT) = e.record_id
            """)
        try statement.bind([.text(scope), .text(rows.table.tableName)])
        defer { statement.reset() }
        while try statement.step() {
            guard !statement.isNull(at: 1) else { continue }
            guard let position = rows.position(of: statement.int64(at: 1)), rows.isDigested(position) else {
                return false
            }
            let digest = rows.differingDigests[position]
                ?? (statement.storageClass(at: 2) == .text
                    ? statement.withTextBytes(at: 2, ChecksumText.objectDigest) : nil)
            guard let digest, let identity = try identity(rows, recordID: statement.text(at: 0)),
                  (try? accumulator.add(identity: identity, rowDigest: digest)) != nil
            else { return false }
        }
        return true
    }

    /// The row identity a record ID of `rows`' table gives; nil when it gives none.
    private func identity(_ rows: AuditedRows, recordID: String) throws -> RowIdentity? {
        let primaryKey = LocalStorageForm.keyJSON(recordID: recordID, type: rows.key.logicalType)
        return try? RowIdentity(manifest: manifest.manifest, tableID: rows.table.tableID, primaryKey: primaryKey)
    }

    /// The tables' indexes in row-identity order: identities of two tables first differ in text(table_id), its
    /// length, then its octets.
    private static func identityOrder(_ tables: [AuditedRows]) -> [Int] {
        tables.indices.sorted { first, second in
            let (a, b) = (tables[first].table.tableID.utf8, tables[second].table.tableID.utf8)
            return a.count != b.count ? a.count < b.count : a.lexicographicallyPrecedes(b)
        }
    }

    /// An ORDER BY putting the record IDs of a key type in row-identity order (`spec/integrity.md` §4.3: an integer
    /// key is its big-endian two's complement, a string key a length-prefixed text), as the client orders them; nil
    /// for another type, whose rows the row pass cannot digest.
    static func edgeOrder(_ type: PortableType) -> String? {
        switch type {
        case .int, .int64: "CAST(record_id AS INTEGER) < 0, CAST(record_id AS INTEGER)"
        case .string: "length(CAST(record_id AS BLOB)), CAST(record_id AS BLOB)"
        default: nil
        }
    }
}
