import SQLiteKit

/// The SQL the server's store runs, independent of the database behind it: cached statements with typed values
/// (``SQLiteValue`` is the value type of both implementations: null, integer, real, text, blob), write
/// transactions and savepoints. ``SQLiteStoreExecutor`` runs it on SQLiteKit (the default, embedded store);
/// ``PostgresStoreExecutor`` on PostgresKit, translating the few dialect differences in ``PostgresDialect``.
///
/// Statements are written in SQLite's dialect, restricted to what both databases share or what
/// ``PostgresDialect`` translates: `?`/`?N` parameters, `INSERT OR REPLACE`/`OR IGNORE`, `INDEXED BY`, `BLOB` and
/// `INTEGER` type names, `IS DISTINCT FROM` for null-safe comparison.
protocol StoreExecutor: AnyObject {
    /// A prepared statement for `sql`, kept for the executor's lifetime.
    func cachedStatement(_ sql: String) throws -> any StoreStatement
    /// Runs a script of statements without parameters or results (DDL).
    func execute(_ script: String) throws
    /// Inserts `rows` (each one value per column of `columns`) into `table`: the bulk path of the initial load.
    /// SQLite runs one cached statement per row (in-process, nothing to save); PostgreSQL sends multi-row
    /// statements, one round trip per many rows instead of one per row.
    func insertRows(into table: String, columns: [String], _ rows: [[SQLiteValue]]) throws
    /// Runs `body` in a write transaction: one writer at a time across every process using the database.
    func transaction<Value>(_ body: () throws -> Value) throws -> Value
    /// Runs `body` in a savepoint inside the current transaction, rolled back to when `body` throws.
    func savepoint<Value>(_ name: String, _ body: () throws -> Value) throws -> Value
    /// The key the last insert gave its row (SQLite's rowid; PostgreSQL's `lastval()`).
    func lastInsertRowID() throws -> Int64
    /// The rows the last statement inserted, updated or deleted.
    var changes: Int { get }
    /// The names of the store's tables in byte order (diagnostics).
    func tableNames() throws -> [String]
    /// Whether other processes may use the same database at the same time (PostgreSQL), so nothing another
    /// process can change may be cached between transactions.
    var isShared: Bool { get }
}

/// One cached statement. Rows reach `body` one at a time and are valid only during the call.
protocol StoreStatement {
    func run(_ arguments: [SQLiteValue]) throws
    func rows(_ arguments: [SQLiteValue]) throws -> [[SQLiteValue]]
    func scalar(_ arguments: [SQLiteValue]) throws -> SQLiteValue?
    func forEachRow(_ arguments: [SQLiteValue], _ body: (any StoreRow) throws -> Void) throws
}

extension StoreStatement {
    func rows() throws -> [[SQLiteValue]] { try rows([]) }
    func scalar() throws -> SQLiteValue? { try scalar([]) }

    func query<Element>(_ arguments: [SQLiteValue], _ transform: (any StoreRow) throws -> Element) throws -> [Element] {
        var elements: [Element] = []
        try forEachRow(arguments) { elements.append(try transform($0)) }
        return elements
    }
}

/// The current row of a running statement: typed reads like SQLiteKit's (NULL reads as 0, empty text or empty
/// octets; ``isNull(at:)`` tells it apart), and in-place access to stored octets for response writers.
protocol StoreRow {
    var columnCount: Int { get }
    func int64(at column: Int) -> Int64
    func isNull(at column: Int) -> Bool
    func text(at column: Int) throws -> String
    func blob(at column: Int) -> [UInt8]
    func withBlobBytes<Result>(at column: Int, _ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result
    func withTextBytes<Result>(at column: Int, _ body: (UnsafeBufferPointer<UInt8>) throws -> Result) rethrows -> Result
    func value(at column: Int) throws -> SQLiteValue
}

extension Statement: StoreRow {}

/// The embedded store: one SQLite connection, statements cached by SQLiteKit, `BEGIN IMMEDIATE` write
/// transactions (SQLite's single writer).
final class SQLiteStoreExecutor: StoreExecutor {
    let connection: Connection

    init(_ connection: Connection) {
        self.connection = connection
    }

    var isShared: Bool { false }

    func cachedStatement(_ sql: String) throws -> any StoreStatement {
        SQLiteStoreStatement(statement: try connection.cachedStatement(sql))
    }

    func execute(_ script: String) throws {
        try connection.execute(script)
    }

    func insertRows(into table: String, columns: [String], _ rows: [[SQLiteValue]]) throws {
        let placeholders = Array(repeating: "?", count: columns.count).joined(separator: ", ")
        let statement = try connection.cachedStatement(
            "INSERT INTO \(table)(\(columns.joined(separator: ", "))) VALUES (\(placeholders))")
        for row in rows { try statement.run(row) }
    }

    func transaction<Value>(_ body: () throws -> Value) throws -> Value {
        try connection.transaction(kind: .immediate, body)
    }

    func savepoint<Value>(_ name: String, _ body: () throws -> Value) throws -> Value {
        try connection.savepoint(name, body)
    }

    func lastInsertRowID() throws -> Int64 { connection.lastInsertRowID }

    var changes: Int { connection.changes }

    func tableNames() throws -> [String] {
        try connection.rows(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
        ).compactMap { $0.first?.textValue }
    }
}

struct SQLiteStoreStatement: StoreStatement {
    let statement: Statement

    func run(_ arguments: [SQLiteValue]) throws { try statement.run(arguments) }
    func rows(_ arguments: [SQLiteValue]) throws -> [[SQLiteValue]] { try statement.rows(arguments) }
    func scalar(_ arguments: [SQLiteValue]) throws -> SQLiteValue? { try statement.scalar(arguments) }

    func forEachRow(_ arguments: [SQLiteValue], _ body: (any StoreRow) throws -> Void) throws {
        try statement.forEachRow(arguments) { try body($0) }
    }
}
