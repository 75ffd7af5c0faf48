import SQLiteKit
import SynchroProtocol

extension Statement {
    /// Hands the value of `column` on the current row to `value` through the accessor of its storage class,
    /// without copying it: the way a verifier feeds ``StoredRowDigester`` from a query.
    public func store(column: Int, into value: inout StoredValueWriter) {
        switch storageClass(at: column) {
        case .null: value.null()
        case .integer: value.integer(int64(at: column))
        case .real: value.real(double(at: column))
        case .text: withTextBytes(at: column) { value.text($0) }
        case .blob: withBlobBytes(at: column) { value.blob($0) }
        }
    }
}
