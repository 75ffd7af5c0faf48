/// A Swift value that binds itself to a statement parameter directly, so the parameter-pack `bind` and `run`
/// overloads bind rows without building an array or an intermediate `SQLiteValue`.
public protocol SQLiteBindable {
    /// Binds the value to parameter `index` (1-based) of `statement`.
    func bind(to statement: Statement, at index: Int) throws(SQLiteError)
}

extension SQLiteValue: SQLiteBindable {
    /// Binds the value in its own storage class.
    public func bind(to statement: Statement, at index: Int) throws(SQLiteError) {
        try statement.bind(self, at: index)
    }
}

extension Int64: SQLiteBindable {
    /// Binds an integer.
    public func bind(to statement: Statement, at index: Int) throws(SQLiteError) {
        try statement.bind(self, at: index)
    }
}

extension Int: SQLiteBindable {
    /// Binds an integer.
    public func bind(to statement: Statement, at index: Int) throws(SQLiteError) {
        try statement.bind(self, at: index)
    }
}

extension Int32: SQLiteBindable {
    /// Binds an integer.
    public func bind(to statement: Statement, at index: Int) throws(SQLiteError) {
        try statement.bind(Int64(self), at: index)
    }
}

extension Bool: SQLiteBindable {
    /// Binds 1 for true and 0 for false (SQLite has no boolean storage class).
    public func bind(to statement: Statement, at index: Int) throws(SQLiteError) {
        try statement.bind(Int64(self ? 1 : 0), at: index)
    }
}

extension Double: SQLiteBindable {
    /// Binds a real; SQLite stores NaN as NULL.
    public func bind(to statement: Statement, at index: Int) throws(SQLiteError) {
        try statement.bind(self, at: index)
    }
}

extension String: SQLiteBindable {
    /// Binds text, byte for byte.
    public func bind(to statement: Statement, at index: Int) throws(SQLiteError) {
        try statement.bind(self, at: index)
    }
}

extension Optional: SQLiteBindable where Wrapped: SQLiteBindable {
    /// Binds NULL for nil, otherwise the wrapped value.
    public func bind(to statement: Statement, at index: Int) throws(SQLiteError) {
        switch self {
        case .none: try statement.bindNull(at: index)
        case .some(let value): try value.bind(to: statement, at: index)
        }
    }
}
