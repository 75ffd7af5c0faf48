extension Connection {
    /// How `BEGIN` acquires locks.
    public enum TransactionKind: Sendable, Hashable {
        /// Takes locks on first read or write (`BEGIN DEFERRED`).
        case deferred
        /// Takes the write lock at `BEGIN`, so a busy database fails early rather than at the first write.
        case immediate
        /// Takes the write lock and, outside WAL mode, keeps readers out (`BEGIN EXCLUSIVE`).
        case exclusive

        var beginSQL: String {
            switch self {
            case .deferred: "BEGIN DEFERRED"
            case .immediate: "BEGIN IMMEDIATE"
            case .exclusive: "BEGIN EXCLUSIVE"
            }
        }
    }

    /// Runs `body` in one transaction: commits when it returns, rolls back when it throws and rethrows its error.
    ///
    /// When COMMIT itself fails (a deferred foreign key violation, `SQLITE_BUSY`), the transaction is rolled back
    /// and the commit error is thrown, so nothing durable remains half-done. Transactions do not nest; use
    /// `savepoint` inside one.
    public func transaction<Result>(kind: TransactionKind = .deferred, _ body: () throws -> Result) throws -> Result {
        try runControl(kind.beginSQL)
        let result: Result
        do {
            result = try body()
        } catch {
            rollbackIfActive()
            throw error
        }
        do {
            try runControl("COMMIT")
        } catch {
            rollbackIfActive()
            throw error
        }
        return result
    }

    /// Runs `body` inside `SAVEPOINT name`: released when it returns, rolled back to and released when it throws.
    ///
    /// Savepoints nest; outside a transaction the outermost one behaves like `BEGIN DEFERRED … COMMIT`.
    public func savepoint<Result>(_ name: String = "sqlitekit", _ body: () throws -> Result) throws -> Result {
        let quotedName = SQLiteIdentifier.quote(name)
        try runControl("SAVEPOINT \(quotedName)")
        let result: Result
        do {
            result = try body()
        } catch {
            abandonSavepoint(quotedName)
            throw error
        }
        do {
            try runControl("RELEASE \(quotedName)")
        } catch {
            abandonSavepoint(quotedName)
            throw error
        }
        return result
    }

    private func runControl(_ sql: String) throws(SQLiteError) {
        try cachedStatement(sql).run()
    }

    private func rollbackIfActive() {
        // SQLite rolls back by itself after some errors (SQLITE_FULL, SQLITE_IOERR…); ROLLBACK would then fail.
        if isInTransaction {
            try? runControl("ROLLBACK")
        }
    }

    private func abandonSavepoint(_ quotedName: String) {
        // Best effort: the caller's error is the one worth reporting, and an automatic rollback may already
        // have removed the savepoint.
        try? runControl("ROLLBACK TO \(quotedName)")
        try? runControl("RELEASE \(quotedName)")
    }
}
