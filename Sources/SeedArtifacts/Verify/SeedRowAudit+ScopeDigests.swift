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
        // The edges as stored first: an exporter writes them in identity order, and reading them so needs no sort
        // (no temporary file); only when they are not is the scope read again through a sort.
        for sorted in [false, true] {
            switch try streamedDigest(scope: scope, edges: edges, tables: tables, sorted: sorted) {
            case .digest(let digest):
                tally.digest = digest
                return tally
            case .unknown: return tally
            case .unordered: continue
            }
        }
        return tally
    }

    /// What streaming a scope's entries gave.
    enum StreamedDigest {
        case digest([UInt8])
        /// An entry cannot be added: the digest is unknown.
        case unknown
        /// The edges as stored are not in identity order (only when not `sorted`).
        case unordered
    }

    private func streamedDigest(
        scope: String, edges: ScopeEdges, tables: [AuditedRows], sorted: Bool
    ) throws -> StreamedDigest {
        guard var accumulator = try? ScopeDigestAccumulator(
            schemaHash: manifest.manifest.schemaHashOctets, scopeID: scope, cardinality: UInt64(edges.members))
        else { return .unknown }
        let allRows = tables.reduce(0) { $0 + $1.count }
        for index in Self.identityOrder(tables) where edges.tables.contains(UInt32(index)) {
            let rows = tables[index]
            guard let order = Self.edgeOrder(rows.key.logicalType) else { return .unknown }
            let outcome: StreamedDigest?
            if edges.exactTables.contains(UInt32(index)) {
                outcome = try feedFromRows(scope: scope, rows, order: order, into: &accumulator) ? nil : .unknown
            } else {
                // Stored order: a table holding most rows is scanned (no index walk, no sort); a small one's few
                // edges are found through the index and sorted by rowid.
                let filter = !sorted && rows.count * 4 >= allRows
                    ? "+scope_id = ?1 AND +table_name = ?2" : "scope_id = ?1 AND table_name = ?2"
                outcome = try feedFromEdges(
                    scope: scope, rows, filter: filter, order: sorted ? order : "rowid", stored: !sorted,
                    into: &accumulator)
            }
            if let outcome { return outcome }
        }
        guard let digest = try? accumulator.finalize() else { return .unknown }
        return .digest(digest)
    }

    /// Each edge of `scope` in `rows`' table (`filter`, ?1 the scope, ?2 the table) in `order`, with the digest it
    /// carries; nil when every one was added. With `stored` (the order edges were written in), an edge out of
    /// identity order gives ``StreamedDigest/unordered``.
    private func feedFromEdges(
        scope: String, _ rows: AuditedRows, filter: String, order: String, stored: Bool,
        into accumulator: inout ScopeDigestAccumulator
    ) throws -> StreamedDigest? {
        let statement = try connection.prepare(
            "SELECT record_id, checksum FROM _synchro_scope_rows WHERE \(filter) ORDER BY \(order)")
        try statement.bind([.text(scope), .text(rows.table.tableName)])
        defer { statement.reset() }
        while try statement.step() {
            guard let identity = try identity(rows, recordID: statement.text(at: 0)),
                  let digest = statement.withTextBytes(at: 1, ChecksumText.bareDigest)
            else { return .unknown }
            do {
                try accumulator.add(identity: identity, rowDigest: digest)
            } catch .outOfOrder where stored {
                return .unordered
            } catch {
                return .unknown
            }
        }
        return nil
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
