/// Whole-statement execution: bind, run to completion or iterate the rows, and leave the statement reusable.
extension Statement {
    /// Binds `arguments` and runs the statement to completion, discarding any rows (e.g. from `RETURNING`).
    public func run(_ arguments: [SQLiteValue]) throws(SQLiteError) {
        try bind(arguments)
        while try step() {}
    }

    /// Binds `values` and runs the statement to completion without allocating: the fast path for bulk writes.
    @inlinable
    public func run<each Value: SQLiteBindable>(_ values: repeat each Value) throws(SQLiteError) {
        try bind(repeat each values)
        while try step() {}
    }

    /// Binds `arguments` and calls `body` for each row; the statement is reset afterwards, even on error.
    ///
    /// `body` reads the current row from the statement it receives and must not step or reset it.
    public func forEachRow(_ arguments: [SQLiteValue] = [], _ body: (Statement) throws -> Void) throws {
        try bind(arguments)
        defer { reset() }
        while try step() {
            try body(self)
        }
    }

    /// Binds `arguments` and returns `transform` applied to each row; the statement is reset afterwards.
    public func query<Element>(
        _ arguments: [SQLiteValue] = [], _ transform: (Statement) throws -> Element
    ) throws -> [Element] {
        var elements: [Element] = []
        try forEachRow(arguments) { row in
            elements.append(try transform(row))
        }
        return elements
    }

    /// Binds `arguments` and returns every row as values; the statement is reset afterwards.
    public func rows(_ arguments: [SQLiteValue] = []) throws(SQLiteError) -> [[SQLiteValue]] {
        try bind(arguments)
        defer { reset() }
        var rows: [[SQLiteValue]] = []
        while try step() {
            rows.append(try values())
        }
        return rows
    }

    /// Binds `arguments` and returns the first column of the first row, or nil when there is no row.
    public func scalar(_ arguments: [SQLiteValue] = []) throws(SQLiteError) -> SQLiteValue? {
        try bind(arguments)
        defer { reset() }
        return try step() ? value(at: 0) : nil
    }
}
