import SQLiteKit

/// The connection settings the upstream client gets from GRDB (`spec/client-store.md` §1).
enum ConnectionConventions {
    /// Busy timeout of every connection.
    static let busyTimeoutMilliseconds = 5_000

    /// Page cache of the engine connection, KiB: a rebuild or pull page's transaction (rows, row versions, edges,
    /// their indexes and the page receipt) stays in memory until it commits instead of spilling pages to the WAL
    /// and reading them back. SQLite allocates it only as pages are used.
    static let engineCacheKiB = 65_536

    /// Opens the engine connection: WAL, foreign keys on, 5 s busy timeout, a page cache of
    /// ``engineCacheKiB``, and statement journals in memory (a multi-row upsert keeps the pages it changes until
    /// it completes; on a file that is a temporary file written and read for every page of every statement).
    static func openEngine(path: String) throws(SQLiteError) -> Connection {
        let connection = try Connection(path: path, mode: .readWriteCreate)
        try connection.setBusyTimeout(milliseconds: busyTimeoutMilliseconds)
        try connection.setForeignKeys(true)
        try connection.setJournalMode(.wal)
        try connection.execute("PRAGMA cache_size = -\(engineCacheKiB)")
        try connection.execute("PRAGMA temp_store = MEMORY")
        return connection
    }

    /// Opens the application write connection: foreign keys on, 5 s busy timeout, recursive triggers on (the
    /// soft-delete trigger's nested UPDATE must itself be captured) and untrusted schema (functions in triggers
    /// and views must be innocuous).
    static func openApplication(path: String) throws(SQLiteError) -> Connection {
        let connection = try Connection(path: path, mode: .readWrite)
        try connection.setBusyTimeout(milliseconds: busyTimeoutMilliseconds)
        try connection.setForeignKeys(true)
        try connection.execute("PRAGMA recursive_triggers = ON")
        try connection.execute("PRAGMA trusted_schema = OFF")
        return connection
    }
}
