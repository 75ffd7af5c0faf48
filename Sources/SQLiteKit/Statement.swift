import CSQLite

/// One prepared SQLite statement: bind parameters, step through rows, read typed columns.
///
/// A statement belongs to the connection that prepared it and follows the same threading rule: use it from one
/// thread or task at a time, never concurrently with its connection. It may outlive `Connection.close()`: it
/// then refuses to step (`connectionClosed`) and SQLite keeps the file open until the statement is released.
/// Parameter indexes are 1-based and column indexes 0-based, as in SQLite.
public final class Statement {
    let handle: OpaquePointer
    private let lifetime: ConnectionLifetime

    init(handle: OpaquePointer, lifetime: ConnectionLifetime) {
        self.handle = handle
        self.lifetime = lifetime
    }

    deinit {
        sqlite3_finalize(handle)
    }

    /// The SQL text the statement was prepared from (with parameters, never with bound values).
    public var sql: String {
        sqlite3_sql(handle).map { String(cString: $0) } ?? ""
    }

    /// Whether the statement cannot write the database file (`sqlite3_stmt_readonly`).
    ///
    /// This is how application SQL is classified as a read before it runs: `SELECT` and read-only CTEs are
    /// read-only; `INSERT`/`UPDATE`/`DELETE` (with or without `RETURNING`) and DDL are not. SQLite also reports
    /// `BEGIN`, `COMMIT`, `ROLLBACK`, `SAVEPOINT` and `RELEASE` as read-only, so reject transaction control
    /// separately (the authorizer sees it as `.transaction`/`.savepoint`).
    public var isReadOnly: Bool {
        sqlite3_stmt_readonly(handle) != 0
    }

    /// Whether the statement has stepped but neither finished nor been reset (it may hold a read transaction).
    public var isBusy: Bool {
        sqlite3_stmt_busy(handle) != 0
    }

    /// The number of parameters, i.e. the largest parameter index.
    public var parameterCount: Int {
        Int(sqlite3_bind_parameter_count(handle))
    }

    /// The name of parameter `index` including its prefix (`:id`), or nil for a nameless `?`.
    public func parameterName(at index: Int) -> String? {
        sqlite3_bind_parameter_name(handle, Int32(clamping: index)).map { String(cString: $0) }
    }

    /// The index of the parameter spelled exactly `name` (with its `:`, `@` or `$` prefix), if present.
    public func parameterIndex(named name: String) -> Int? {
        let index = sqlite3_bind_parameter_index(handle, name)
        return index == 0 ? nil : Int(index)
    }

    /// The number of result columns (0 for statements that return no rows).
    public var columnCount: Int {
        Int(sqlite3_column_count(handle))
    }

    /// The name of result column `index` (its `AS` alias when there is one).
    public func columnName(at index: Int) -> String {
        sqlite3_column_name(handle, Int32(clamping: index)).map { String(cString: $0) } ?? ""
    }

    /// The names of all result columns, in order.
    public var columnNames: [String] {
        (0..<columnCount).map { columnName(at: $0) }
    }

    /// Advances to the next row: true when a row is available, false when the statement has finished.
    public func step() throws(SQLiteError) -> Bool {
        guard lifetime.isOpen else {
            throw SQLiteError.refusal(.connectionClosed)
        }
        let resultCode = sqlite3_step(handle)
        if resultCode == SQLITE_ROW {
            return true
        }
        if resultCode == SQLITE_DONE {
            return false
        }
        throw failure(resultCode)
    }

    /// Rewinds the statement so it can run again and releases any read transaction it holds. Bindings stay.
    public func reset() {
        // sqlite3_reset repeats the last step's error, which step() has already reported.
        sqlite3_reset(handle)
    }

    /// Sets every parameter back to NULL.
    public func clearBindings() {
        sqlite3_clear_bindings(handle)
    }

    func failure(_ resultCode: Int32) -> SQLiteError {
        SQLiteError(resultCode: resultCode, database: sqlite3_db_handle(handle), sql: sql)
    }

    func check(_ resultCode: Int32) throws(SQLiteError) {
        if resultCode != SQLITE_OK {
            throw failure(resultCode)
        }
    }
}

/// Whether a connection is still open, shared with its statements so they can refuse to run after a close.
final class ConnectionLifetime {
    var isOpen = true
}
