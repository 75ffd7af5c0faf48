import CSQLite

/// Typed reads of the current row. They are valid only after `step()` returned true and before the next
/// `step()` or `reset()`. The typed accessors convert like SQLite's `sqlite3_column_*` functions (NULL reads as
/// 0, 0.0, empty text or an empty blob); use `isNull(at:)` or `value(at:)` where NULL must be told apart.
extension Statement {
    /// The column as an integer.
    public func int64(at column: Int) -> Int64 {
        sqlite3_column_int64(handle, Int32(clamping: column))
    }

    /// The column as a Swift `Int`.
    public func int(at column: Int) -> Int {
        Int(sqlite3_column_int64(handle, Int32(clamping: column)))
    }

    /// The column as a double.
    public func double(at column: Int) -> Double {
        sqlite3_column_double(handle, Int32(clamping: column))
    }

    /// Whether the column is SQL NULL.
    public func isNull(at column: Int) -> Bool {
        sqlite3_column_type(handle, Int32(clamping: column)) == SQLITE_NULL
    }

    /// The column's text, decoded from its exact UTF-8 bytes; invalid UTF-8 is an error, never repaired.
    public func text(at column: Int) throws(SQLiteError) -> String {
        let decoded = withTextBytes(at: column) { bytes in
            String(validating: bytes, as: UTF8.self)
        }
        guard let decoded else {
            throw SQLiteError.refusal(.invalidUTF8Text(column: column), sql: sql)
        }
        return decoded
    }

    /// The column's text as raw UTF-8 bytes, exactly as stored.
    public func textBytes(at column: Int) -> [UInt8] {
        withTextBytes(at: column) { Array($0) }
    }

    /// Calls `body` with the column's text bytes without copying them; the buffer is valid only inside `body`.
    public func withTextBytes<Result>(
        at column: Int, _ body: (UnsafeBufferPointer<UInt8>) throws -> Result
    ) rethrows -> Result {
        let position = Int32(clamping: column)
        // sqlite3_column_bytes must follow sqlite3_column_text: the conversion to text fixes the byte count.
        let base = sqlite3_column_text(handle, position)
        let count = Int(sqlite3_column_bytes(handle, position))
        guard let base, count > 0 else {
            return try body(UnsafeBufferPointer(start: nil, count: 0))
        }
        return try body(UnsafeBufferPointer(start: base, count: count))
    }

    /// The column's bytes; NULL and empty blobs both read as an empty array.
    public func blob(at column: Int) -> [UInt8] {
        let position = Int32(clamping: column)
        let base = sqlite3_column_blob(handle, position)
        let count = Int(sqlite3_column_bytes(handle, position))
        guard let base, count > 0 else {
            return []
        }
        return Array(UnsafeRawBufferPointer(start: base, count: count))
    }

    /// Calls `body` with the column's bytes without copying them (NULL and empty blobs give an empty
    /// buffer); the buffer is valid only inside `body`. Response writers splice stored octets this way.
    public func withBlobBytes<Result>(
        at column: Int, _ body: (UnsafeRawBufferPointer) throws -> Result
    ) rethrows -> Result {
        let position = Int32(clamping: column)
        // sqlite3_column_bytes must follow sqlite3_column_blob, as for text.
        let base = sqlite3_column_blob(handle, position)
        let count = Int(sqlite3_column_bytes(handle, position))
        guard let base, count > 0 else {
            return try body(UnsafeRawBufferPointer(start: nil, count: 0))
        }
        return try body(UnsafeRawBufferPointer(start: base, count: count))
    }

    /// The column's stored octets in place (NULL and empty blobs give an empty buffer), valid until the next
    /// `step()`, `reset()` or read of the column as another type. Not generic, unlike ``withBlobBytes(at:_:)``: a
    /// loop over many rows in another module (a scope digest's input) pays no generic-metadata lookup per call.
    public func unsafeBlobBytes(at column: Int) -> UnsafeBufferPointer<UInt8> {
        let position = Int32(clamping: column)
        let base = sqlite3_column_blob(handle, position)
        let count = Int(sqlite3_column_bytes(handle, position))
        guard let base, count > 0 else { return UnsafeBufferPointer(start: nil, count: 0) }
        return UnsafeBufferPointer(start: base.assumingMemoryBound(to: UInt8.self), count: count)
    }

    /// The column in its own storage class, so NULL, integers, reals, text and blobs are told apart.
    public func value(at column: Int) throws(SQLiteError) -> SQLiteValue {
        switch sqlite3_column_type(handle, Int32(clamping: column)) {
        case SQLITE_INTEGER: .integer(int64(at: column))
        case SQLITE_FLOAT: .real(double(at: column))
        case SQLITE_TEXT: .text(try text(at: column))
        case SQLITE_BLOB: .blob(blob(at: column))
        default: .null
        }
    }

    /// Every column of the current row, in order.
    public func values() throws(SQLiteError) -> [SQLiteValue] {
        let count = columnCount
        var row: [SQLiteValue] = []
        row.reserveCapacity(count)
        for column in 0..<count {
            row.append(try value(at: column))
        }
        return row
    }
}
