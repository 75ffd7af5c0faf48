import SQLiteKit
import SynchroProtocol

extension Statement {
    /// Hands the value of `column` on the current row to `value` through the accessor of its storage class,
    /// without copying it: the way a verifier feeds ``StoredRowDigester`` from a query.
    package func store(column: Int, into value: inout StoredValueWriter) {
        switch storageClass(at: column) {
        case .null: value.null()
        case .integer: value.integer(int64(at: column))
        case .real: value.real(double(at: column))
        case .text: withTextBytes(at: column) { value.text($0) }
        case .blob: withBlobBytes(at: column) { value.blob($0) }
        }
    }
}

extension StoredRowDigester {
    /// The layout for digesting `table`'s rows straight from a query that selects its columns in declaration
    /// order; nil when the local columns are not exactly the manifest's fields with the manifest's types (then a
    /// verifier takes the wire path, which reports why).
    package func layout(for table: LocalSchemaTable) -> StoredRowLayout? {
        guard let manifestTable = manifest.table(id: table.tableID),
            table.columns.allSatisfy({ column in
                manifestTable.fields.contains { $0.fieldID == column.fieldID && $0.type == column.logicalType }
            })
        else { return nil }
        return try? layout(tableID: table.tableID, columnFieldIDs: table.columns.map(\.fieldID))
    }
}
