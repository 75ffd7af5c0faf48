import SQLiteKit
import SynchroProtocol
import SynchroStore

/// The complete scope recomputation that classifies each edge (validation, and the fallback of the fast paths).
extension LocalRows {
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
    static func checksumDigest(_ text: String) -> [UInt8]? {
        (try? Checksum(json: StrictJSONParser().parse(Array(text.utf8))))?.digest
    }
}
