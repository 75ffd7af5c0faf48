import CSQLite

/// SQLite's `SQLITE_TRANSIENT` sentinel: SQLite copies the bytes before the bind call returns, so a Swift
/// buffer only needs to live for the duration of the call.
var sqliteTransient: sqlite3_destructor_type {
    unsafeBitCast(-1 as Int, to: sqlite3_destructor_type.self)
}

extension Statement {
    /// Binds `value` to parameter `index` (1-based).
    public func bind(_ value: SQLiteValue, at index: Int) throws(SQLiteError) {
        switch value {
        case .null: try bindNull(at: index)
        case .integer(let integer): try bind(integer, at: index)
        case .real(let real): try bind(real, at: index)
        case .text(let text): try bind(text, at: index)
        case .blob(let bytes): try bind(bytes, at: index)
        }
    }

    /// Binds an integer to parameter `index`.
    public func bind(_ value: Int64, at index: Int) throws(SQLiteError) {
        try check(sqlite3_bind_int64(handle, Int32(clamping: index), value))
    }

    /// Binds an integer to parameter `index`.
    public func bind(_ value: Int, at index: Int) throws(SQLiteError) {
        try check(sqlite3_bind_int64(handle, Int32(clamping: index), Int64(value)))
    }

    /// Binds a double to parameter `index`; SQLite stores NaN as NULL.
    public func bind(_ value: Double, at index: Int) throws(SQLiteError) {
        try check(sqlite3_bind_double(handle, Int32(clamping: index), value))
    }

    /// Binds text to parameter `index`: its exact UTF-8 bytes, copied by SQLite, with no Foundation bridging.
    public func bind(_ value: String, at index: Int) throws(SQLiteError) {
        var text = value
        let resultCode = text.withUTF8 { bytes in
            bindText(bytes, at: Int32(clamping: index))
        }
        try check(resultCode)
    }

    /// Binds bytes to parameter `index`; an empty array binds an empty blob, not NULL.
    public func bind(_ value: [UInt8], at index: Int) throws(SQLiteError) {
        let resultCode = value.withUnsafeBytes { bytes in bindBlob(bytes, at: Int32(clamping: index)) }
        try check(resultCode)
    }

    /// Binds NULL to parameter `index`.
    public func bindNull(at index: Int) throws(SQLiteError) {
        try check(sqlite3_bind_null(handle, Int32(clamping: index)))
    }

    /// Binds `value` to the parameter spelled `name`; without a prefix, `:name`, `@name` and `$name` are tried.
    public func bind(_ value: SQLiteValue, named name: String) throws(SQLiteError) {
        try bind(value, at: resolveParameter(named: name))
    }

    /// Resets the statement and binds `arguments` to parameters 1…n; n must equal `parameterCount`.
    public func bind(_ arguments: [SQLiteValue]) throws(SQLiteError) {
        reset()
        try requireParameterCount(arguments.count)
        for (offset, argument) in arguments.enumerated() {
            try bind(argument, at: offset + 1)
        }
    }

    /// Resets the statement and binds `values` to parameters 1…n without building an array.
    ///
    /// Inlinable so that callers in other modules get a version specialized for their concrete value types.
    @inlinable
    public func bind<each Value: SQLiteBindable>(_ values: repeat each Value) throws(SQLiteError) {
        reset()
        let expected = parameterCount
        var index = 0
        for value in repeat each values {
            index += 1
            // Surplus values are counted, not bound, so the mismatch is reported rather than SQLITE_RANGE.
            if index <= expected {
                try value.bind(to: self, at: index)
            }
        }
        try requireParameterCount(index)
    }

    /// Resets the statement and binds every parameter by name; every parameter must be named and given.
    public func bind(named arguments: [String: SQLiteValue]) throws(SQLiteError) {
        reset()
        clearBindings()
        try requireParameterCount(arguments.count)
        for (name, value) in arguments {
            try bind(value, at: resolveParameter(named: name))
        }
    }

    /// Binds UTF-8 `bytes`; an empty buffer binds empty text rather than NULL. SQLite copies them, unless
    /// `destructor` is nil (`SQLITE_STATIC`): then they must outlive the binding.
    func bindText(
        _ bytes: UnsafeBufferPointer<UInt8>, at position: Int32, destructor: sqlite3_destructor_type? = sqliteTransient
    ) -> Int32 {
        let encoding = UInt8(SQLITE_UTF8)
        guard let base = bytes.baseAddress, bytes.count > 0 else {
            return sqlite3_bind_text64(handle, position, "", 0, sqliteTransient, encoding)
        }
        let characters = UnsafeRawPointer(base).assumingMemoryBound(to: CChar.self)
        return sqlite3_bind_text64(handle, position, characters, sqlite3_uint64(bytes.count), destructor, encoding)
    }

    /// Binds `bytes` as a blob; an empty buffer binds an empty blob rather than NULL. SQLite copies them, unless
    /// `destructor` is nil (`SQLITE_STATIC`): then they must outlive the binding.
    func bindBlob(
        _ bytes: UnsafeRawBufferPointer, at position: Int32, destructor: sqlite3_destructor_type? = sqliteTransient
    ) -> Int32 {
        // A nil pointer would bind NULL, so an empty blob is bound as a zero-length zeroblob.
        guard let base = bytes.baseAddress, bytes.count > 0 else {
            return sqlite3_bind_zeroblob(handle, position, 0)
        }
        return sqlite3_bind_blob64(handle, position, base, sqlite3_uint64(bytes.count), destructor)
    }

    private func resolveParameter(named name: String) throws(SQLiteError) -> Int {
        if let index = parameterIndex(named: name) {
            return index
        }
        if let first = name.utf8.first, first != UInt8(ascii: ":"), first != UInt8(ascii: "@"),
           first != UInt8(ascii: "$") {
            for prefix in [":", "@", "$"] {
                if let index = parameterIndex(named: prefix + name) {
                    return index
                }
            }
        }
        throw SQLiteError.refusal(.unknownParameterName(name), sql: sql)
    }

    @usableFromInline
    func requireParameterCount(_ given: Int) throws(SQLiteError) {
        let expected = parameterCount
        if given != expected {
            throw SQLiteError.refusal(.argumentCountMismatch(expected: expected, actual: given), sql: sql)
        }
    }
}
