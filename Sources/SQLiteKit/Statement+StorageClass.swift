import CSQLite

/// The storage class of a column value (SQLite's `typeof()`), told apart without converting or copying the value.
public enum SQLiteStorageClass: Sendable, Hashable {
    case null
    case integer
    case real
    case text
    case blob
}

extension Statement {
    /// The storage class of the column in the current row (`sqlite3_column_type`). Call it before a typed accessor
    /// converts the value: reading an integer as text, for instance, may change what SQLite reports afterwards.
    /// Hot loops use it to read each value with the one accessor that does not copy it (`withTextBytes`,
    /// `withBlobBytes`, `int64`, `double`) instead of building a ``SQLiteValue``.
    public func storageClass(at column: Int) -> SQLiteStorageClass {
        switch sqlite3_column_type(handle, Int32(clamping: column)) {
        case SQLITE_INTEGER: .integer
        case SQLITE_FLOAT: .real
        case SQLITE_TEXT: .text
        case SQLITE_BLOB: .blob
        default: .null
        }
    }
}
