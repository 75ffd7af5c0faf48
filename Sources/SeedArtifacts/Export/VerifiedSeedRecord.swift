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
        guard case .object(let object) = record, let members = RecordMembers(object),
              case .string(let tableID) = members.table, case .string(let version) = members.serverVersion
        else { return .failure(RecordFailure(table: nil, rule: "record_shape")) }
        let (pk, row, checksumJSON) = (members.pk, members.row, members.rowChecksum)
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
        var next = 0
        for column in table.columns {
            guard let value = Self.member(column.fieldID, of: fields, from: &next),
                  let stored = LocalStorageForm.sqliteValue(value, type: column.logicalType)
            else { return .failure(RecordFailure(table: table.tableName, rule: "no_storage_form")) }
            values.append(stored)
        }
        return .success(VerifiedSeedRecord(
            tableID: tableID, recordID: recordID, serverVersion: version, identity: computed.identity,
            digest: computed.digest, digestHex: digestHex, row: values))
    }

    /// The value of the member named exactly `name`, what `object[name]` gives, looked for first at `next` (the
    /// member after the previous column's): a row's members and a table's columns usually come in the same order, so
    /// each column is then found with one comparison instead of a scan. Any other order falls back to the scan.
    private static func member(_ name: String, of object: JSONObject, from next: inout Int) -> JSONValue? {
        let members = object.members
        if next < members.count, members[next].key.exactlyEquals(name) {
            next += 1
            return members[next - 1].value
        }
        for index in members.indices where members[index].key.exactlyEquals(name) {
            next = index + 1
            return members[index].value
        }
        return nil
    }
}

/// The five members of a wire record, found in one pass over its members (each name is exactly one of the five, each
/// once). The five names differ in length, so a member is compared with the
/// one name of its length only: the same outcome as five lookups `object["table"]`, … with `count == 5`.
private struct RecordMembers {
    var table = JSONValue.null, pk = JSONValue.null, row = JSONValue.null
    var serverVersion = JSONValue.null, rowChecksum = JSONValue.null

    init?(_ object: JSONObject) {
        guard object.count == 5 else { return nil }
        var seen: UInt8 = 0
        for member in object.members {
            let key = member.key
            let bit: UInt8
            switch key.utf8.count {
            case 5 where key.exactlyEquals("table"): (table, bit) = (member.value, 1)
            case 2 where key.exactlyEquals("pk"): (pk, bit) = (member.value, 2)
            case 3 where key.exactlyEquals("row"): (row, bit) = (member.value, 4)
            case 14 where key.exactlyEquals("server_version"): (serverVersion, bit) = (member.value, 8)
            case 12 where key.exactlyEquals("row_checksum"): (rowChecksum, bit) = (member.value, 16)
            default: return nil
            }
            seen |= bit
        }
        guard seen == 31 else { return nil }
    }
}
