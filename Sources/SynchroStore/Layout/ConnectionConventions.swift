import SQLiteKit

/// The connection settings the upstream client gets from GRDB (`spec/client-store.md` §1).
package enum ConnectionConventions {
    /// Busy timeout of every connection.
    package static let busyTimeoutMilliseconds = 5_000

    /// Page size of a store this engine creates, bytes. A rebuild or pull page commits every page its rows,
    /// row versions, edges and the synced tables' indexes touched — index pages at random positions, so most of
    /// an index per 1000-row page — and SQLite writes each as one WAL frame (a header and a page, two writes):
    /// 16 KiB pages take a quarter of the frames and fewer b-tree levels (docs/decisions.md, "Page size of new
    /// stores"). An existing file, a seed included, keeps its page size.
    package static let newStorePageSize = 16_384

    /// Opens the engine connection: WAL, foreign keys on, 5 s busy timeout; a new file gets
    /// ``newStorePageSize``.
    package static func openEngine(path: String) throws(SQLiteError) -> Connection {
        let connection = try Connection(path: path, mode: .readWriteCreate)
        try connection.setBusyTimeout(milliseconds: busyTimeoutMilliseconds)
        try connection.setForeignKeys(true)
        try connection.execute("PRAGMA page_size = \(newStorePageSize)")
        try connection.setJournalMode(.wal)
        return connection
    }

    /// Opens the application write connection: foreign keys on, 5 s busy timeout, recursive triggers on (the
    /// soft-delete trigger's nested UPDATE must itself be captured) and untrusted schema (functions in triggers
    /// and views must be innocuous).
    package static func openApplication(path: String) throws(SQLiteError) -> Connection {
        let connection = try Connection(path: path, mode: .readWrite)
        try connection.setBusyTimeout(milliseconds: busyTimeoutMilliseconds)
        try connection.setForeignKeys(true)
        try connection.execute("PRAGMA recursive_triggers = ON")
        try connection.execute("PRAGMA trusted_schema = OFF")
        return connection
    }
}
