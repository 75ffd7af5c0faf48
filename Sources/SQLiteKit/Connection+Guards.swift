import CSQLite

final class ProgressHandlerBox {
    let handler: () -> Bool

    init(_ handler: @escaping () -> Bool) {
        self.handler = handler
    }
}

/// Settings that keep a database nobody trusts from running code of its own on a connection: its triggers and
/// views switched off, and a progress handler that can stop any statement.
extension Connection {
    /// Whether triggers the database holds may fire (`SQLITE_DBCONFIG_ENABLE_TRIGGER`). Off, a write fires none.
    public func setTriggersEnabled(_ enabled: Bool) throws(SQLiteError) {
        try setConfigFlag(SQLITE_DBCONFIG_ENABLE_TRIGGER, enabled)
    }

    /// Whether views the database holds may be read (`SQLITE_DBCONFIG_ENABLE_VIEW`). Off, a statement reading a
    /// view fails to prepare instead of running the view's query.
    public func setViewsEnabled(_ enabled: Bool) throws(SQLiteError) {
        try setConfigFlag(SQLITE_DBCONFIG_ENABLE_VIEW, enabled)
    }

    private func setConfigFlag(_ option: Int32, _ enabled: Bool) throws(SQLiteError) {
        let database = try openHandle()
        let resultCode = seedkit_sqlite3_db_config_flag(database, option, enabled ? 1 : 0)
        if resultCode != SQLITE_OK {
            throw SQLiteError(resultCode: resultCode, database: database)
        }
    }

    /// Installs `handler`, called about every `instructions` virtual-machine instructions of any statement on the
    /// connection (nil removes it). Returning true stops the statement, which then fails with `SQLITE_INTERRUPT`.
    /// The handler must not use the connection.
    public func setProgressHandler(every instructions: Int32, _ handler: (() -> Bool)?) throws(SQLiteError) {
        let database = try openHandle()
        guard let handler else {
            sqlite3_progress_handler(database, 0, nil, nil)
            progressHandlerBox = nil
            return
        }
        let box = ProgressHandlerBox(handler)
        sqlite3_progress_handler(database, max(instructions, 1), { context in
            guard let context else { return 0 }
            return Unmanaged<ProgressHandlerBox>.fromOpaque(context).takeUnretainedValue().handler() ? 1 : 0
        }, Unmanaged.passUnretained(box).toOpaque())
        progressHandlerBox = box
    }
}
