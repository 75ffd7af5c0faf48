import SQLiteKit
import SynchroStore
import SynchroProtocol

/// One exported record after every record check (`spec/seed-format.md` §5 step 12, `spec/integrity.md` §7.4
/// item 4): known table, exact field set, typed values, pk equal to the row's key field, non-empty server
/// version and a recomputed row digest equal to `row_checksum`. Holds the row in local storage form.
struct VerifiedSeedRecord: Sendable {
    let tableID: String
    let recordID: String
    let serverVersion: String
    let identity: RowIdentity
    let digest: [UInt8]
    /// `digest` as 64 lowercase hex characters: the checked `row_checksum` digest member, which spells it so.
    let digestHex: String
    /// SQLite values in the local table's column order.
    let row: [SQLiteValue]
}

/// The rule a record broke, and its table when known.
struct RecordFailure: Error, Sendable {
    let table: String?
    let rule: String
}

/// Checks records of one manifest, reusing one digester.
struct SeedRecordChecker: Sendable {
    private var digester: RowDigester
    private let tables: [String: LocalSchemaTable]

    init(manifest: ClientManifest) {
        digester = RowDigester(manifest: manifest.manifest)
        tables = Dictionary(manifest.localSchema.map { ($0.tableID, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// The verified record, or the rule it broke (and the table, when known).
    mutating func verify(_ record: JSONValue) -> Result<VerifiedSeedRecord, RecordFailure> {
        guard case .object(let object) = record, object.count == 5,
              case .string(let tableID)? = object["table"], let pk = object["pk"], let row = object["row"],
              case .string(let version)? = object["server_version"], let checksumJSON = object["row_checksum"]
        else { return .failure(RecordFailure(table: nil, rule: "record_shape")) }
        guard let table = tables[tableID], table.primaryKeyColumn != nil else {
            return .failure(RecordFailure(table: nil, rule: "unknown_table"))
        }
        guard case .object(let keyObject) = pk, keyObject.count == 1, let key = keyObject[table.primaryKeyFieldID]
        else { return .failure(RecordFailure(table: table.tableName, rule: "invalid_pk_object")) }
        guard let checksum = try? Checksum(json: checksumJSON) else {
            return .failure(RecordFailure(table: table.tableName, rule: "invalid_row_checksum"))
        }
        let computed: (identity: RowIdentity, digest: [UInt8])
        do {
            computed = try digester.digest(tableID: tableID, primaryKey: key, row: row, serverVersion: version)
        } catch {
            return .failure(RecordFailure(table: table.tableName, rule: "invalid_row.\(error.rule)"))
        }
        guard computed.digest == checksum.digest, case .object(let checksumObject) = checksumJSON,
              case .string(let digestHex)? = checksumObject["digest"]
        else { return .failure(RecordFailure(table: table.tableName, rule: "row_digest_mismatch")) }
        guard case .object(let fields) = row, let recordID = LocalStorageForm.recordID(primaryKey: key) else {
            return .failure(RecordFailure(table: table.tableName, rule: "record_shape"))
        }
        var values: [SQLiteValue] = []
        values.reserveCapacity(table.columns.count)
        for column in table.columns {
            guard let value = fields[column.fieldID],
                  let stored = LocalStorageForm.sqliteValue(value, type: column.logicalType)
            else { return .failure(RecordFailure(table: table.tableName, rule: "no_storage_form")) }
            values.append(stored)
        }
        return .success(VerifiedSeedRecord(
            tableID: tableID, recordID: recordID, serverVersion: version, identity: computed.identity,
            digest: computed.digest, digestHex: digestHex, row: values))
    }
}
