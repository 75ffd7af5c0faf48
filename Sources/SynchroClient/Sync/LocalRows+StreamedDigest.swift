import SQLiteKit
import SynchroProtocol
import SynchroStore

/// The scope digest streamed from stored rows in identity order, without holding the scope in memory.
extension LocalRows {
    /// ``scopeDigest(scope:)`` computed while SQLite reads the edges in row-identity order, so that one row is
    /// held at a time instead of the scope (`spec/integrity.md` §4.6: streaming SHA-256 in identity order). One
    /// query per table joins each edge with its row and its row version, and each unprotected row is digested
    /// straight from its stored values (``StoredRowDigester``). Nil whenever that might not equal the complete
    /// computation — an edge without its row or version, a record ID that is not its key's canonical text, a
    /// value that path does not vouch for, an unknown table, an identity out of order or repeated — and the
    /// caller then runs ``audit(scope:detailed:)``, which decides.
    ///
    /// `store`, when given, receives every entry in identity order: identity, digest (nil for a protected row, whose
    /// digest is its edge's), table name and record ID (``StoredScopeDigests/rewrite(scope:on:_:)``).
    func streamedScopeDigest(
        scope: String, store: (RowIdentity, [UInt8]?, String, String) throws -> Void = { _, _, _, _ in }
    ) throws -> Checksum? {
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
                let isProtected = protected.contains(recordID)
                if isProtected {
                    entry = (try identity(table, key, recordID), Hex.decode(try statement.text(at: 1)) ?? [])
                } else {
                    entry = Self.storedEntry(statement, layout: layout, digester: &digester)
                }
                guard let entry else { return nil }
                guard (try? accumulator.add(identity: entry.identity, rowDigest: entry.digest)) != nil else {
                    return nil
                }
                try store(entry.identity, isProtected ? nil : entry.digest, table.tableName, recordID)
            }
        }
        return try Self.checksum(of: accumulator)
    }

    /// The edges of one scope (`?1`) and table (`?2`) in row-identity order, each with whether its row matches
    /// it exactly (column 2: 1 when the row exists under the canonical text of its key), the row version's
    /// server version (column 3) and the row's columns in declaration order (from column 4).
    static func streamedEdgesSQL(_ table: LocalSchemaTable, key: LocalSchemaColumn, order: String) -> String {
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
    static func storedEntry(
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
    static func identityOrder(_ type: PortableType) -> String? {
        switch type {
        case .int, .int64: "CAST(record_id AS INTEGER) < 0, CAST(record_id AS INTEGER)"
        case .string: "length(CAST(record_id AS BLOB)), CAST(record_id AS BLOB)"
        default: nil
        }
    }
}
