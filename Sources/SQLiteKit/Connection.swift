import CSQLite

/// One SQLite database connection over a file (or `:memory:`), with a statement cache.
///
/// Threading rule: a connection, and every statement it prepared, is used from one thread or task at a time.
/// It is deliberately not `Sendable`, so the compiler enforces this; it may be handed over to another task
/// (`sending`), never shared. SQLite is opened with `SQLITE_OPEN_NOMUTEX` on the strength of that rule. The only
/// cross-thread operation is `interruptHandle.interrupt()`.
///
/// Closures installed on the connection (authorizer, functions, hooks) are kept until the connection closes;
/// a closure that captures the connection strongly keeps it alive until `close()` is called explicitly.
public final class Connection {
    /// How the file is opened.
    public enum OpenMode: Sendable, Hashable {
        /// Read and write; create the file when it is missing.
        case readWriteCreate
        /// Read and write an existing file.
        case readWrite
        /// Read only: every write fails with `SQLITE_READONLY` (how seed databases are inspected).
        case readOnly
    }

    /// The path or URI the connection was opened with.
    public let path: String
    /// Interrupts the connection's running statement from any thread; a no-op once the connection is closed.
    public let interruptHandle: InterruptHandle

    private(set) var handle: OpaquePointer?
    let lifetime = ConnectionLifetime()
    var statementCache: [String: Statement] = [:]
    var authorizerBox: AuthorizerBox?
    var commitHookBox: CommitHookBox?
    var rollbackHookBox: RollbackHookBox?
    var walHookBox: WALHookBox?
    var progressHandlerBox: ProgressHandlerBox?

    /// Opens `path` in `mode`; with `uri`, `path` may be a `file:` URI with query parameters (`?mode=ro`,
    /// `?immutable=1`). Extended result codes are enabled.
    public init(path: String, mode: OpenMode = .readWriteCreate, uri: Bool = false) throws(SQLiteError) {
        var flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
        switch mode {
        case .readWriteCreate: flags |= SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
        case .readWrite: flags |= SQLITE_OPEN_READWRITE
        case .readOnly: flags |= SQLITE_OPEN_READONLY
        }
        if uri {
            flags |= SQLITE_OPEN_URI
        }
        var database: OpaquePointer?
        let resultCode = sqlite3_open_v2(path, &database, flags, nil)
        guard resultCode == SQLITE_OK, let database else {
            let error = SQLiteError(resultCode: resultCode, database: database)
            // SQLite allocates a handle even when opening fails; it must still be closed.
            sqlite3_close_v2(database)
            throw error
        }
        sqlite3_extended_result_codes(database, 1)
        self.path = path
        self.handle = database
        self.interruptHandle = InterruptHandle(database: database)
    }

    deinit {
        close()
    }

    /// Whether `close()` has not been called yet.
    public var isOpen: Bool {
        handle != nil
    }

    /// Closes the connection; calling it again does nothing.
    ///
    /// Cached statements are finalized. A statement the caller still holds keeps SQLite's handle (and the file)
    /// open until it is released, but refuses to run.
    public func close() {
        guard let database = handle else {
            return
        }
        interruptHandle.invalidate()
        lifetime.isOpen = false
        statementCache.removeAll()
        sqlite3_set_authorizer(database, nil, nil)
        sqlite3_commit_hook(database, nil, nil)
        sqlite3_rollback_hook(database, nil, nil)
        sqlite3_wal_hook(database, nil, nil)
        sqlite3_progress_handler(database, 0, nil, nil)
        authorizerBox = nil
        commitHookBox = nil
        rollbackHookBox = nil
        walHookBox = nil
        progressHandlerBox = nil
        // close_v2 defers the real close until statements held elsewhere are finalized; functions' destructors
        // run then.
        sqlite3_close_v2(database)
        handle = nil
    }

    /// The open SQLite handle, or `connectionClosed`.
    func openHandle() throws(SQLiteError) -> OpaquePointer {
        guard let handle else {
            throw SQLiteError.refusal(.connectionClosed)
        }
        return handle
    }

    /// Whether the main database is read-only (opened read-only, or a read-only file or URI).
    public var isReadOnly: Bool {
        guard let handle else {
            return false
        }
        return sqlite3_db_readonly(handle, "main") == 1
    }

    /// Whether a transaction is open (SQLite is not in autocommit mode).
    public var isInTransaction: Bool {
        guard let handle else {
            return false
        }
        return sqlite3_get_autocommit(handle) == 0
    }

    /// The rowid of the most recent successful INSERT on this connection.
    public var lastInsertRowID: Int64 {
        handle.map { sqlite3_last_insert_rowid($0) } ?? 0
    }

    /// Rows changed by the most recent INSERT, UPDATE or DELETE (not counting trigger-made changes).
    public var changes: Int {
        handle.map { Int(sqlite3_changes64($0)) } ?? 0
    }

    /// Rows changed since the connection opened, including trigger-made changes.
    public var totalChanges: Int {
        handle.map { Int(sqlite3_total_changes64($0)) } ?? 0
    }

    /// Makes a locked database retried for up to `milliseconds` before failing with `SQLITE_BUSY` (0 disables).
    public func setBusyTimeout(milliseconds: Int) throws(SQLiteError) {
        let database = try openHandle()
        let resultCode = sqlite3_busy_timeout(database, Int32(clamping: milliseconds))
        if resultCode != SQLITE_OK {
            throw SQLiteError(resultCode: resultCode, database: database)
        }
    }

    /// Stops the statement running on this connection, which then fails with `SQLITE_INTERRUPT`.
    public func interrupt() {
        interruptHandle.interrupt()
    }
}
