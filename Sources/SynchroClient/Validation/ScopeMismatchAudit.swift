import SQLiteKit
import SynchroStore
import SynchroProtocol

/// A second, per-row look at a scope whose stored checksum the local rows do not reproduce: which rows are damaged,
/// and whether the mismatch can instead come from rows whose digest the store cannot recompute now.
///
/// A protected row contributes its stored edge digest, the digest of its server-confirmed base (`spec/client-store.md`
/// §9, "Scope digest recomputation"); its local values differ on purpose and the base values are not stored. After a
/// Class 2 change that edge digest is the one verified under the earlier schema, while the stored scope checksum was
/// verified under the active one (`spec/integrity.md` §4.5–§4.6: both digests bind the schema hash), so the scope
/// cannot be recomputed offline until the push of that row and its pull echo. An unprotected row is damaged only when
/// its values reproduce its last authoritative digest neither under the active schema nor under the earlier schema
/// that digest was stored with. Counts per table only: never keys or values.
struct ScopeMismatchAudit {
    /// Unprotected rows whose values reproduce their last authoritative digest under no archived schema, per table.
    private(set) var damagedRows: [String: Int] = [:]
    /// Rows protected by unresolved local intent that the scope covers.
    private(set) var protectedRows = 0
    /// Whether the store archived a schema before the active one, so a protected row's digest may predate it.
    private(set) var hasEarlierSchemas = false

    /// Whether the mismatch is explained without damage: nothing unprotected is damaged or missing, and protected
    /// rows carry digests that may have been verified under an earlier schema.
    func awaitsPush(missingRows: [String: Int]) -> Bool {
        damagedRows.isEmpty && missingRows.isEmpty && protectedRows > 0 && hasEarlierSchemas
    }

    /// Audits every edge of `scope` under `manifest`, reading the local rows through `rows`.
    init(scope: String, manifest: ClientManifest, rows: LocalRows, connection: Connection) throws {
        let archive = try ArchivedRowDigester(connection: connection, active: manifest.manifest.reference)
        hasEarlierSchemas = archive.hasEarlierSchemas
        let tables = Dictionary(
            manifest.localSchema.map { ($0.tableName, $0) }, uniquingKeysWith: { first, _ in first })
        let edges = try connection.query(
            "SELECT table_name, record_id FROM _synchro_scope_rows WHERE scope_id = ?", [.text(scope)]
        ) { (try $0.text(at: 0), try $0.text(at: 1)) }
        for (tableName, recordID) in edges {
            guard let table = tables[tableName], let manifestTable = manifest.manifest.table(id: table.tableID)
            else { continue }
            if try rows.isProtected(tableName: tableName, recordID: recordID) {
                protectedRows += 1
                continue
            }
            guard let row = try Self.unprotectedRow(table, recordID: recordID, connection: connection) else {
                continue
            }
            if !Self.reproducesAuthoritative(row, table: manifestTable, manifest: manifest.manifest, archive: archive) {
                damagedRows[tableName, default: 0] += 1
            }
        }
    }

    /// A stored row with its server version and last authoritative digest; nil when the row or its version is
    /// missing (the scope audit reports those) or no authoritative digest is recorded.
    private struct StoredRow {
        let primaryKey: JSONValue
        let values: JSONValue
        let serverVersion: String
        let authoritative: [UInt8]
    }

    private static func unprotectedRow(
        _ table: LocalSchemaTable, recordID: String, connection: Connection
    ) throws -> StoredRow? {
        guard let key = table.primaryKeyColumn else { return nil }
        let columns = table.columns.map { SQLiteIdentifier.quote($0.name) }.joined(separator: ", ")
        guard let stored = try connection.rows(
                "SELECT \(columns) FROM \(SQLiteIdentifier.quote(table.tableName)) "
                    + "WHERE \(SQLiteIdentifier.quote(key.name)) = ?",
                [LocalStorageForm.keyValue(recordID: recordID, type: key.logicalType)]).first,
            let version = try connection.rows(
                "SELECT server_version, row_checksum FROM _synchro_row_versions WHERE table_name = ? AND record_id = ?",
                [.text(table.tableName), .text(recordID)]).first,
            let serverVersion = version[0].textValue,
            let checksumText = version[1].textValue,
            let checksum = try? Checksum(json: StrictJSONParser().parse(Array(checksumText.utf8)))
        else { return nil }
        var members: [JSONMember] = []
        for (column, value) in zip(table.columns, stored) {
            members.append(JSONMember(column.fieldID, LocalStorageForm.wireValue(value, type: column.logicalType) ?? .null))
        }
        return StoredRow(
            primaryKey: LocalStorageForm.keyJSON(recordID: recordID, type: key.logicalType),
            values: .object(JSONObject(members)), serverVersion: serverVersion, authoritative: checksum.digest)
    }

    /// Whether the row's values give its authoritative digest under the active schema or an archived earlier one.
    private static func reproducesAuthoritative(
        _ row: StoredRow, table: ManifestTable, manifest: SchemaManifest, archive: ArchivedRowDigester
    ) -> Bool {
        guard let active = try? RowDigest.compute(
            manifest: manifest, tableID: table.tableID, primaryKey: row.primaryKey, row: row.values,
            serverVersion: row.serverVersion)
        else { return false }
        return active.digest == row.authoritative
            || archive.reproduces(row.authoritative, active: active, table: table, serverVersion: row.serverVersion)
    }
}
