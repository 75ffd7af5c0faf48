import CSQLite

/// Whole-statement execution: bind, run to completion or iterate the rows, and leave the statement reusable.
extension Statement {
    /// Binds `arguments` and runs the statement to completion, discarding any rows (e.g. from `RETURNING`).
    ///
    /// Text and blob arguments are not handed to SQLite to copy one by one: they are laid out in one buffer that
    /// lives for the run and bound in place (`SQLITE_STATIC`), and the statement is reset and its parameters set
    /// back to NULL before this returns, so that it never keeps a pointer into the buffer. A multi-row write binds
    /// thousands of values, and SQLite's own copy of each (`SQLITE_TRANSIENT`) costs an allocation and a free.
    public func run(_ arguments: [SQLiteValue]) throws(SQLiteError) {
        reset()
        try requireParameterCount(arguments.count)
        var length = 0
        for argument in arguments {
            switch argument {
            case .text(let text): length += text.utf8.count
            case .blob(let bytes): length += bytes.count
            case .null, .integer, .real: break
            }
        }
        var buffer: [UInt8] = []
        buffer.reserveCapacity(length)
        for argument in arguments {
            switch argument {
            case .text(let text): buffer.append(contentsOf: text.utf8)
            case .blob(let bytes): buffer.append(contentsOf: bytes)
            case .null, .integer, .real: break
            }
        }
        let failure = buffer.withUnsafeBufferPointer { storage -> SQLiteError? in
            defer {
                sqlite3_reset(handle)
                sqlite3_clear_bindings(handle)
            }
            var offset = 0
            for (index, argument) in arguments.enumerated() {
                let resultCode = bindInPlace(argument, at: Int32(index + 1), storage: storage, offset: &offset)
                if resultCode != SQLITE_OK { return self.failure(resultCode) }
            }
            do throws(SQLiteError) {
                while try step() {}
            } catch {
                return error
            }
            return nil
        }
        if let failure { throw failure }
    }

    /// Binds `argument` to parameter `position`, text and blob octets in place at `offset` of `storage`, which
    /// must outlive the binding; advances `offset` past them.
    private func bindInPlace(
        _ argument: SQLiteValue, at position: Int32, storage: UnsafeBufferPointer<UInt8>, offset: inout Int
    ) -> Int32 {
        switch argument {
        case .null:
            return sqlite3_bind_null(handle, position)
        case .integer(let integer):
            return sqlite3_bind_int64(handle, position, integer)
        case .real(let real):
            return sqlite3_bind_double(handle, position, real)
        case .text(let text):
            let count = text.utf8.count
            defer { offset += count }
            let bytes = UnsafeBufferPointer(rebasing: storage[offset..<(offset + count)])
            return bindText(bytes, at: position, destructor: nil)
        case .blob(let bytes):
            defer { offset += bytes.count }
            let stored = UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: storage[offset..<(offset + bytes.count)]))
            return bindBlob(stored, at: position, destructor: nil)
        }
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
