import CSQLite

extension Connection {
    /// Runs a script of zero or more statements separated by semicolons, discarding rows (migrations, schema
    /// setup, pragmas). Application SQL must go through `prepare` instead, which accepts one statement only.
    public func execute(_ script: String) throws(SQLiteError) {
        let database = try openHandle()
        guard !script.utf8.contains(0) else {
            throw SQLiteError.refusal(.sqlContainsNUL)
        }
        let failure: SQLiteError? = script.withCString { start in
            var cursor = start
            while cursor.pointee != 0 {
                var statement: OpaquePointer?
                var tail: UnsafePointer<CChar>?
                let prepared = sqlite3_prepare_v2(database, cursor, -1, &statement, &tail)
                guard prepared == SQLITE_OK else {
                    return SQLiteError(resultCode: prepared, database: database, sql: String(cString: cursor))
                }
                guard let statement, let tail else {
                    return nil  // only whitespace and comments remained
                }
                defer { sqlite3_finalize(statement) }
                var stepped = sqlite3_step(statement)
                while stepped == SQLITE_ROW {
                    stepped = sqlite3_step(statement)
                }
                guard stepped == SQLITE_DONE else {
                    let sql = sqlite3_sql(statement).map { String(cString: $0) }
                    return SQLiteError(resultCode: stepped, database: database, sql: sql)
                }
                cursor = tail
            }
            return nil
        }
        if let failure {
            throw failure
        }
    }

    /// Prepares exactly one statement. Anything but whitespace, comments and semicolons after it is refused
    /// with `multipleStatements` before any of it runs (one statement per call, as application SQL requires).
    public func prepare(_ sql: String) throws(SQLiteError) -> Statement {
        try prepareSingle(sql, persistent: false)
    }

    /// Returns the cached statement for `sql`, preparing and caching it on first use; reset with bindings cleared.
    ///
    /// Reuse avoids re-parsing hot SQL. If the cached statement is still being iterated (stepped and not
    /// finished or reset), a fresh uncached statement is returned instead, so nested use of the same SQL is safe.
    public func cachedStatement(_ sql: String) throws(SQLiteError) -> Statement {
        if let cached = statementCache[sql] {
            if cached.isBusy {
                return try prepareSingle(sql, persistent: false)
            }
            cached.reset()
            cached.clearBindings()
            return cached
        }
        let statement = try prepareSingle(sql, persistent: true)
        statementCache[sql] = statement
        return statement
    }

    /// Finalizes every cached statement (statements still held by callers stay valid).
    public func clearStatementCache() {
        statementCache.removeAll()
    }

    /// Runs one statement with `arguments` to completion (a write, or a pragma whose result is not needed).
    public func run(_ sql: String, _ arguments: [SQLiteValue] = []) throws(SQLiteError) {
        try prepare(sql).run(arguments)
    }

    /// Runs one statement and calls `body` for each row; `body` reads the row and must not step the statement.
    public func forEachRow(
        _ sql: String, _ arguments: [SQLiteValue] = [], _ body: (Statement) throws -> Void
    ) throws {
        try prepare(sql).forEachRow(arguments, body)
    }

    /// Runs one statement and returns `transform` applied to each row.
    public func query<Element>(
        _ sql: String, _ arguments: [SQLiteValue] = [], _ transform: (Statement) throws -> Element
    ) throws -> [Element] {
        try prepare(sql).query(arguments, transform)
    }

    /// Runs one statement and returns every row as values.
    public func rows(_ sql: String, _ arguments: [SQLiteValue] = []) throws(SQLiteError) -> [[SQLiteValue]] {
        try prepare(sql).rows(arguments)
    }

    /// Runs one statement and returns the first column of its first row, or nil when it returns no row.
    public func scalar(_ sql: String, _ arguments: [SQLiteValue] = []) throws(SQLiteError) -> SQLiteValue? {
        try prepare(sql).scalar(arguments)
    }

    private func prepareSingle(_ sql: String, persistent: Bool) throws(SQLiteError) -> Statement {
        let database = try openHandle()
        guard !sql.utf8.contains(0) else {
            throw SQLiteError.refusal(.sqlContainsNUL, sql: sql)
        }
        let flags = persistent ? UInt32(SQLITE_PREPARE_PERSISTENT) : 0
        let outcome: Result<OpaquePointer, SQLiteError> = sql.withCString { start in
            var statement: OpaquePointer?
            var tail: UnsafePointer<CChar>?
            let resultCode = sqlite3_prepare_v3(database, start, -1, flags, &statement, &tail)
            guard resultCode == SQLITE_OK else {
                return .failure(SQLiteError(resultCode: resultCode, database: database, sql: sql))
            }
            guard let statement else {
                return .failure(.refusal(.emptyStatement, sql: sql))
            }
            if let tail, !isIgnorableTail(tail) {
                sqlite3_finalize(statement)
                return .failure(.refusal(.multipleStatements, sql: sql))
            }
            return .success(statement)
        }
        return Statement(handle: try outcome.get(), lifetime: lifetime)
    }
}

/// Whether the NUL-terminated `text` holds only whitespace, comments and semicolons: what may follow the single
/// statement of a `prepare`. Checked lexically so the trailing SQL is never compiled (nor seen by an authorizer).
private func isIgnorableTail(_ text: UnsafePointer<CChar>) -> Bool {
    var cursor = UnsafeRawPointer(text).assumingMemoryBound(to: UInt8.self)
    while true {
        switch cursor.pointee {
        case 0:
            return true
        case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), 0x0C, UInt8(ascii: "\r"), UInt8(ascii: ";"):
            cursor += 1
        case UInt8(ascii: "-") where cursor[1] == UInt8(ascii: "-"):
            cursor += 2
            while cursor.pointee != 0 && cursor.pointee != UInt8(ascii: "\n") {
                cursor += 1
            }
        case UInt8(ascii: "/") where cursor[1] == UInt8(ascii: "*"):
            cursor += 2
            // SQLite accepts a block comment left open at the end of the text.
            while cursor.pointee != 0 && !(cursor[0] == UInt8(ascii: "*") && cursor[1] == UInt8(ascii: "/")) {
                cursor += 1
            }
            if cursor.pointee != 0 {
                cursor += 2
            }
        default:
            return false
        }
    }
}
