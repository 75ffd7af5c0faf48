import CPQ
import Foundation

/// One PostgreSQL connection through libpq.
///
/// The connection string is libpq's own: a `postgresql://` URI or `key=value` pairs, with `PGHOST`, `PGUSER`,
/// `PGPASSWORD`, `~/.pgpass`, `sslmode` and the rest applied by libpq exactly as `psql` applies them. Threading
/// rule, as for SQLiteKit's `Connection`: one thread or task at a time, so the type is not `Sendable`.
public final class PostgresConnection {
    /// Where the connection goes, for messages: `host:port/database as user`, never a password.
    public let target: String
    var handle: OpaquePointer?

    /// Seconds libpq waits for a connection when neither the string nor `PGCONNECT_TIMEOUT` sets a limit (libpq
    /// itself waits forever).
    public static let defaultConnectTimeoutSeconds = 10

    /// Connects with `connectionString` (empty: libpq's defaults and environment only).
    public init(connectionString: String) throws(PostgresError) {
        try Self.validate(connectionString)
        let connection = Self.connect(connectionString)
        guard let connection else { throw .client(reason: "out of memory while connecting") }
        let target = Self.target(of: connection)
        guard PQstatus(connection) == CONNECTION_OK else {
            let message = PostgresResultReader.firstLine(String(cString: PQerrorMessage(connection)))
            let needsPassword = PQconnectionNeedsPassword(connection) == 1
            PQfinish(connection)
            if needsPassword || message.contains("authentication failed") {
                throw .authenticationFailed(target: target)
            }
            throw .cannotConnect(target: target, reason: message)
        }
        self.handle = connection
        self.target = target
        // Protocol text is UTF-8 whatever the server's or the environment's default is.
        _ = try execute("SET client_encoding = 'UTF8'")
    }

    deinit {
        close()
    }

    /// Closes the connection; later calls fail with `connection_lost`.
    public func close() {
        if let handle { PQfinish(handle) }
        handle = nil
    }

    /// The backend process ID serving this connection (`pg_backend_pid()`).
    public var backendPID: Int32 {
        handle.map { PQbackendPID($0) } ?? 0
    }

    /// The server version as PostgreSQL numbers it (150018 for 15.18).
    public var serverVersion: Int {
        handle.map { Int(PQserverVersion($0)) } ?? 0
    }

    /// Runs one statement with text parameters (`$1`, `$2`, …; nil is SQL NULL) and returns all of its rows.
    @discardableResult
    public func execute(_ sql: String, _ parameters: [String?] = []) throws(PostgresError) -> PostgresRows {
        let handle = try live()
        let result = Self.withParameters(parameters) { values in
            PQexecParams(handle, sql, Int32(values.count), nil, values, nil, nil, 0)
        }
        guard let result else { throw failure(nil) }
        defer { PQclear(result) }
        do {
            return try PostgresResultReader.rows(result)
        } catch {
            throw failure(error)
        }
    }

    /// Runs one query and hands its rows to `body` one at a time as they arrive (libpq's single-row mode), so
    /// memory stays flat in the number of rows. An error from `body` stops the query and is rethrown after the
    /// connection is drained.
    public func forEachRow(
        _ sql: String, _ parameters: [String?] = [], _ body: (borrowing PostgresRow) throws -> Void
    ) throws {
        let handle = try live()
        let sent = Self.withParameters(parameters) { values in
            PQsendQueryParams(handle, sql, Int32(values.count), nil, values, nil, nil, 0)
        }
        guard sent == 1, PQsetSingleRowMode(handle) == 1 else { throw failure(nil) }
        var pending: (any Error)?
        while let result = PQgetResult(handle) {
            defer { PQclear(result) }
            guard pending == nil else { continue }
            switch PQresultStatus(result) {
            case PGRES_SINGLE_TUPLE:
                do {
                    try body(PostgresRow(result: result, row: 0))
                } catch {
                    pending = error
                    _ = cancelRunningStatement(handle)
                }
            case PGRES_TUPLES_OK, PGRES_COMMAND_OK:
                break
            default:
                pending = failure(PostgresResultReader.error(of: result))
            }
        }
        if let pending { throw pending }
    }

    /// Runs `COPY … TO STDOUT` (text format) and hands each data row's octets to `body` as libpq delivers them;
    /// returns the number of rows. The floor any row-by-row reader of the same rows is compared with.
    public func copyOut(_ sql: String, _ body: (UnsafeRawBufferPointer) -> Void) throws(PostgresError) -> Int {
        let handle = try live()
        guard let started = PQexec(handle, sql) else { throw failure(nil) }
        let status = PQresultStatus(started)
        let startError = status == PGRES_COPY_OUT ? nil : PostgresResultReader.error(of: started)
        PQclear(started)
        if let startError { throw failure(startError) }
        var rows = 0
        while true {
            var buffer: UnsafeMutablePointer<CChar>?
            let length = PQgetCopyData(handle, &buffer, 0)
            guard length > 0, let buffer else { break }
            body(UnsafeRawBufferPointer(start: buffer, count: Int(length)))
            PQfreemem(buffer)
            rows += 1
        }
        var pending: PostgresError?
        while let result = PQgetResult(handle) {
            if pending == nil, PQresultStatus(result) != PGRES_COMMAND_OK {
                pending = PostgresResultReader.error(of: result)
            }
            PQclear(result)
        }
        if let pending { throw failure(pending) }
        return rows
    }

    /// Runs `body` inside one transaction of `mode`, committing when it returns and rolling back when it throws.
    public func transaction<Value>(
        _ mode: PostgresTransactionMode = .init(), _ body: (PostgresConnection) throws -> Value
    ) throws -> Value {
        try execute(mode.beginSQL)
        do {
            let value = try body(self)
            try execute("COMMIT")
            return value
        } catch {
            if handle.map({ PQstatus($0) == CONNECTION_OK }) == true {
                _ = try? execute("ROLLBACK")
            }
            throw error
        }
    }

    // MARK: - Helpers

    func live() throws(PostgresError) -> OpaquePointer {
        guard let handle, PQstatus(handle) == CONNECTION_OK else { throw .connectionLost(target: target) }
        return handle
    }

    /// The error to report after a failed call: a broken connection wins over the statement's own error (a
    /// terminated backend reports `57P01` and then the connection is gone).
    func failure(_ error: PostgresError?) -> PostgresError {
        guard let handle, PQstatus(handle) == CONNECTION_OK else { return .connectionLost(target: target) }
        if let error { return error }
        return .client(reason: PostgresResultReader.firstLine(String(cString: PQerrorMessage(handle))))
    }

    private func cancelRunningStatement(_ handle: OpaquePointer) -> Bool {
        guard let cancel = PQgetCancel(handle) else { return false }
        defer { PQfreeCancel(cancel) }
        var buffer = [CChar](repeating: 0, count: 256)
        return PQcancel(cancel, &buffer, Int32(buffer.count)) == 1
    }

    /// The keywords `connectionString` sets explicitly (libpq's parse, without the environment or defaults), e.g. to
    /// refuse a password written into a file. Never returns values: they may be secrets.
    public static func keywords(of connectionString: String) throws(PostgresError) -> Set<String> {
        var message: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(connectionString, &message) else {
            if let message { PQfreemem(message) }
            throw .invalidConnectionString(reason: "not a libpq URI or key=value list")
        }
        defer { PQconninfoFree(options) }
        var keywords: Set<String> = []
        var option = options
        while let keyword = option.pointee.keyword {
            if option.pointee.val != nil { keywords.insert(String(cString: keyword)) }
            option += 1
        }
        return keywords
    }

    private static func validate(_ connectionString: String) throws(PostgresError) {
        var message: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(connectionString, &message) else {
            let reason = message.map { PostgresResultReader.firstLine(String(cString: $0)) } ?? "unreadable"
            if let message { PQfreemem(message) }
            throw .invalidConnectionString(reason: reason)
        }
        PQconninfoFree(options)
    }

    /// Connects with `connectionString` expanded by libpq, with ``defaultConnectTimeoutSeconds`` as the connect
    /// timeout unless the string or the environment sets one (later keywords override earlier ones).
    private static func connect(_ connectionString: String) -> OpaquePointer? {
        var keywords = ["dbname"]
        var values = [connectionString]
        if ProcessInfo.processInfo.environment["PGCONNECT_TIMEOUT"] == nil {
            keywords.insert("connect_timeout", at: 0)
            values.insert(String(defaultConnectTimeoutSeconds), at: 0)
        }
        return withCStrings(keywords) { keywordPointers in
            withCStrings(values) { valuePointers in
                PQconnectdbParams(keywordPointers, valuePointers, 1)
            }
        }
    }

    private static func target(of connection: OpaquePointer) -> String {
        func text(_ value: UnsafeMutablePointer<CChar>?) -> String { value.map { String(cString: $0) } ?? "" }
        let host = text(PQhost(connection))
        let port = text(PQport(connection))
        return "\(host.isEmpty ? "localhost" : host):\(port)/\(text(PQdb(connection))) as \(text(PQuser(connection)))"
    }

    static func withParameters<Result>(
        _ parameters: [String?], _ body: ([UnsafePointer<CChar>?]) -> Result
    ) -> Result {
        let copies = parameters.map { $0.flatMap { strdup($0) } }
        defer { copies.forEach { free($0) } }
        return body(copies.map { $0.map { UnsafePointer($0) } })
    }
}

/// Runs `body` with NUL-terminated copies of `strings` followed by a NULL entry, as libpq's arrays want them.
private func withCStrings<Result>(_ strings: [String], _ body: ([UnsafePointer<CChar>?]) -> Result) -> Result {
    let copies = strings.map { strdup($0) }
    defer { copies.forEach { free($0) } }
    return body(copies.map { $0.map { UnsafePointer($0) } } + [nil])
}

/// How a transaction begins (`BEGIN ISOLATION LEVEL … READ ONLY DEFERRABLE`).
public struct PostgresTransactionMode: Sendable, Equatable {
    /// The isolation levels PostgreSQL implements.
    public enum Isolation: String, Sendable {
        case readCommitted = "READ COMMITTED"
        case repeatableRead = "REPEATABLE READ"
        case serializable = "SERIALIZABLE"
    }

    public var isolation: Isolation
    public var readOnly: Bool
    /// Only meaningful for a serializable read-only transaction: wait for a snapshot that cannot fail.
    public var deferrable: Bool

    /// A mode; the default is the server's own (`READ COMMITTED`, read-write).
    public init(isolation: Isolation = .readCommitted, readOnly: Bool = false, deferrable: Bool = false) {
        self.isolation = isolation
        self.readOnly = readOnly
        self.deferrable = deferrable
    }

    /// `SERIALIZABLE READ ONLY DEFERRABLE`: the one consistent, never-failing snapshot a seed export reads.
    public static let snapshotExport = PostgresTransactionMode(isolation: .serializable, readOnly: true, deferrable: true)

    /// The statement that begins a transaction of this mode.
    public var beginSQL: String {
        "BEGIN ISOLATION LEVEL \(isolation.rawValue)" + (readOnly ? " READ ONLY" : " READ WRITE")
            + (deferrable ? " DEFERRABLE" : "")
    }
}
