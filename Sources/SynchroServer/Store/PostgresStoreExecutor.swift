import PostgresKit
import SQLiteKit

/// The store on PostgreSQL: one connection per server process, statements translated once
/// (``PostgresDialect``) and prepared on first use, values sent and read in binary where the octets matter.
///
/// Several server processes may share the database. Every write transaction takes one transaction-scoped advisory
/// lock first (``PostgresDialect/writerLockKey``): requests then run one at a time across processes, exactly as
/// they run one at a time on SQLite's single writer, and READ COMMITTED gives each statement after the lock every
/// commit made before it (docs/decisions.md, "The reference server on PostgreSQL").
final class PostgresStoreExecutor: StoreExecutor {
    let connection: PostgresConnection
    private var prepared: [String: PostgresStoreStatement] = [:]
    private(set) var changes = 0

    /// Connects and selects the server's schema (``ServerStore`` creates it, under the writer lock: two
    /// concurrent `CREATE SCHEMA IF NOT EXISTS` can fail on PostgreSQL).
    init(connectionString: String) throws {
        connection = try PostgresConnection(connectionString: connectionString)
        try connection.execute("SET client_min_messages = warning")
        try connection.execute("SET search_path = \(PostgresDialect.schemaName)")
    }

    var isShared: Bool { true }

    func cachedStatement(_ sql: String) throws -> any StoreStatement {
        if let statement = prepared[sql] { return statement }
        let name = "s\(prepared.count + 1)"
        try connection.prepare(name, PostgresDialect.translate(sql))
        let statement = PostgresStoreStatement(executor: self, name: name)
        prepared[sql] = statement
        return statement
    }

    func execute(_ script: String) throws {
        try connection.executeScript(script)
    }

    /// At most this many rows per statement (and 32,767 parameters, well under the protocol's 65,535): large
    /// enough that the round trip no longer dominates, small enough to keep a statement's parameters small.
    static let rowsPerInsert = 500

    func insertRows(into table: String, columns: [String], _ rows: [[SQLiteValue]]) throws {
        let perStatement = max(1, min(Self.rowsPerInsert, 32_767 / max(1, columns.count)))
        var start = rows.startIndex
        while start < rows.endIndex {
            let end = min(start + perStatement, rows.endIndex)
            let statement = try cachedStatement(Self.multiRowInsert(table, columns, rows: end - start))
            try statement.run(rows[start..<end].flatMap { $0 })
            start = end
        }
    }

    /// `INSERT INTO table(columns) VALUES (?, …), (?, …), …` with `rows` rows; each parameter takes the type of its
    /// target column.
    private static func multiRowInsert(_ table: String, _ columns: [String], rows: Int) -> String {
        let tuple = "(" + Array(repeating: "?", count: columns.count).joined(separator: ", ") + ")"
        return "INSERT INTO \(table)(\(columns.joined(separator: ", "))) VALUES "
            + Array(repeating: tuple, count: rows).joined(separator: ", ")
    }

    func transaction<Value>(_ body: () throws -> Value) throws -> Value {
        try connection.execute("BEGIN ISOLATION LEVEL READ COMMITTED")
        do {
            try connection.execute("SELECT pg_advisory_xact_lock(\(PostgresDialect.writerLockKey))")
            let value = try body()
            try connection.execute("COMMIT")
            return value
        } catch {
            _ = try? connection.execute("ROLLBACK")
            throw error
        }
    }

    func savepoint<Value>(_ name: String, _ body: () throws -> Value) throws -> Value {
        try connection.execute("SAVEPOINT \(name)")
        do {
            let value = try body()
            try connection.execute("RELEASE SAVEPOINT \(name)")
            return value
        } catch {
            _ = try? connection.execute("ROLLBACK TO SAVEPOINT \(name)")
            _ = try? connection.execute("RELEASE SAVEPOINT \(name)")
            throw error
        }
    }

    func lastInsertRowID() throws -> Int64 {
        guard let text = try connection.execute("SELECT lastval()").scalar, let value = Int64(text) else {
            throw SyncIntegrityViolation()
        }
        return value
    }

    func tableNames() throws -> [String] {
        try connection.execute(
            "SELECT tablename::text FROM pg_tables WHERE schemaname = $1 ORDER BY tablename COLLATE \"C\"",
            [PostgresDialect.schemaName]
        ).rows.compactMap { $0[0].map { String(decoding: $0, as: UTF8.self) } }
    }

    fileprivate func run(_ name: String, _ arguments: [SQLiteValue]) throws -> PostgresResult {
        let result = try connection.executePrepared(name, arguments.map(Self.parameter))
        changes = result.affectedRows
        return result
    }

    /// Integers and text go as text and take the type their place gives them (a `bytea` place reads digits as
    /// octets, which is how the integer counters of `server_meta` are stored: ``ServerStore/metaInteger(_:)``).
    private static func parameter(_ value: SQLiteValue) -> PostgresParameter {
        switch value {
        case .null: .null
        case .integer(let integer): .text(String(integer))
        case .real(let real): .text(String(real))
        case .text(let text): .text(text)
        case .blob(let bytes): .bytea(bytes)
        }
    }
}

struct PostgresStoreStatement: StoreStatement {
    unowned let executor: PostgresStoreExecutor
    let name: String

    func run(_ arguments: [SQLiteValue]) throws {
        _ = try executor.run(name, arguments)
    }

    func rows(_ arguments: [SQLiteValue]) throws -> [[SQLiteValue]] {
        let result = try executor.run(name, arguments)
        var row = PostgresStoreRow(result: result, row: 0)
        var rows: [[SQLiteValue]] = []
        for index in 0..<result.rowCount {
            row.row = index
            rows.append(try (0..<result.columnCount).map { try row.value(at: $0) })
        }
        return rows
    }

    func scalar(_ arguments: [SQLiteValue]) throws -> SQLiteValue? {
        let result = try executor.run(name, arguments)
        guard result.rowCount > 0 else { return nil }
        return try PostgresStoreRow(result: result, row: 0).value(at: 0)
    }

    func forEachRow(_ arguments: [SQLiteValue], _ body: (any StoreRow) throws -> Void) throws {
        let result = try executor.run(name, arguments)
        for index in 0..<result.rowCount {
            try body(PostgresStoreRow(result: result, row: index))
        }
    }
}

/// One row of a binary-format result.
struct PostgresStoreRow: StoreRow {
    let result: PostgresResult
    var row: Int

    var columnCount: Int { result.columnCount }

    func int64(at column: Int) -> Int64 { result.integer(row: row, column: column) ?? 0 }

    func isNull(at column: Int) -> Bool { result.isNull(row: row, column: column) }

    func text(at column: Int) throws -> String {
        let text = result.withBytes(row: row, column: column) { String(validating: $0, as: UTF8.self) }
        guard let text else { throw SyncIntegrityViolation() }
        return text
    }

    func blob(at column: Int) -> [UInt8] {
        result.withBytes(row: row, column: column) { Array($0) }
    }

    func withBlobBytes<Result>(at column: Int, _ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try result.withBytes(row: row, column: column, body)
    }

    func withTextBytes<Result>(
        at column: Int, _ body: (UnsafeBufferPointer<UInt8>) throws -> Result
    ) rethrows -> Result {
        try result.withBytes(row: row, column: column) { try body($0.assumingMemoryBound(to: UInt8.self)) }
    }

    func value(at column: Int) throws -> SQLiteValue {
        if isNull(at: column) { return .null }
        if let integer = result.integer(row: row, column: column) { return .integer(integer) }
        if let real = result.real(row: row, column: column) { return .real(real) }
        if result.isTextual(column: column) { return .text(try text(at: column)) }
        return .blob(blob(at: column))
    }
}
