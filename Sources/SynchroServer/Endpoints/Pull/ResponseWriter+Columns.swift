import SQLiteKit
import SynchroProtocol

/// Writing stored columns of the current statement row straight into a response body, without
/// an intermediate array or string per column: a 1,000-record rebuild or pull page reads five
/// columns per record, and every one of them is already in its wire form (canonical JSON for keys
/// and rows, raw digests, printable ASCII versions).
extension ResponseWriter {
    /// A stored canonical JSON value (row or key), copied as stored.
    mutating func spliceColumn(_ statement: any StoreRow, _ column: Int) {
        statement.withBlobBytes(at: column) { splice($0) }
    }

    /// The checksum object of a stored 32-octet digest; any other length is an integrity failure.
    mutating func checksumColumn(_ statement: any StoreRow, _ column: Int) throws {
        try statement.withBlobBytes(at: column) { digest in
            guard digest.count == 32 else { throw SyncIntegrityViolation() }
            checksum(digest)
        }
    }

    /// The JSON string of a stored text column: copied as is when it needs no escaping (a server
    /// version always qualifies), otherwise decoded and escaped like any other string (invalid
    /// UTF-8 then fails exactly as `Statement.text(at:)` does).
    mutating func stringColumn(_ statement: any StoreRow, _ column: Int) throws {
        try statement.withTextBytes(at: column) { text in
            if !plainASCIIString(text) { try string(try statement.text(at: column)) }
        }
    }
}

/// The JSON string forms of a table ID and of its key field ID, for row loops over stored rows.
///
/// Consecutive stored rows mostly share a table (identity order groups rows by table), so the
/// current table's ID octets are compared with the row's before anything is decoded or looked up.
struct TableNames {
    private var keys: PrimaryKeyFields
    private var currentID: [UInt8] = []
    /// `"<table_id>"` of the current table, escaped.
    private(set) var table: [UInt8] = []
    /// `"<primary_key_field_id>"` of the current table, escaped.
    private(set) var keyField: [UInt8] = []

    init(manifest: SchemaManifest) {
        keys = PrimaryKeyFields(manifest: manifest)
    }

    /// Makes the table named by the text `column` of the current row current. A table the
    /// manifest lacks is an integrity failure (as in ``PrimaryKeyFields``).
    mutating func select(_ statement: any StoreRow, column: Int) throws {
        let same = statement.withTextBytes(at: column) { $0.count > 0 && $0.elementsEqual(currentID) }
        guard !same else { return }
        let tableID = try statement.text(at: column)
        let fieldID = try keys.fieldID(table: tableID)
        var table: [UInt8] = []
        try CanonicalJSON.appendString(tableID, to: &table)
        var keyField: [UInt8] = []
        try CanonicalJSON.appendString(fieldID, to: &keyField)
        currentID = Array(tableID.utf8)
        self.table = table
        self.keyField = keyField
    }
}
