import SQLiteKit
import SynchroStore

/// The statement surface inside ``ClientStore/transaction(_:)`` and ``ClientStore/atomicWriteTransaction(_:)``:
/// one statement per call, classified before SQLite runs it. It exposes no connection and is valid only
/// inside its callback.
public final class ApplicationTransaction {
    private let connection: ApplicationConnection
    private var isActive = true

    init(connection: ApplicationConnection) {
        self.connection = connection
    }

    func end() {
        isActive = false
    }

    /// Runs one read-only statement (checked before it runs: a write with `RETURNING` is refused).
    public func query(_ sql: String, _ arguments: [SQLiteValue] = []) throws(ApplicationSQLError) -> [Row] {
        guard isActive else { throw .transactionEnded }
        return try connection.query(sql, arguments)
    }

    /// Runs one `INSERT`, `UPDATE` or `DELETE` (or local-only DDL) and returns the rows it changed directly.
    /// Writes to synced tables are captured by the triggers in this same transaction.
    @discardableResult
    public func execute(_ sql: String, _ arguments: [SQLiteValue] = []) throws(ApplicationSQLError) -> Int {
        guard isActive else { throw .transactionEnded }
        return try connection.execute(sql, arguments)
    }
}
