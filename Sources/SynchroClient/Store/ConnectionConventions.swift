import SQLiteKit

/// The connection settings the upstream client gets from GRDB (`spec/client-store.md` §1).
enum ConnectionConventions {
    /// Busy timeout of every connection.
    static let busyTimeoutMilliseconds = 5_000

    /// Opens the engine connection: WAL, foreign keys on, 5 s busy timeout.
    static func openEngine(path: String) throws(SQLiteError) -> Connection {
        let connection = try Connection(path: path, mode: .readWriteCreate)
        try connection.setBusyTimeout(milliseconds: busyTimeoutMilliseconds)
        try connection.setForeignKeys(true)
        try connection.setJournalMode(.wal)
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
