import SQLiteKit

extension SQLiteValue {
    /// SQLite's name of the storage class (`typeof()`), for messages that must not show the value.
    var storageClassName: String {
        switch self {
        case .null: "null"
        case .integer: "integer"
        case .real: "real"
        case .text: "text"
        case .blob: "blob"
        }
    }
}
