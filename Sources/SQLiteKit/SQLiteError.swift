import CSQLite

/// A failure reported by SQLite or by this layer, with the extended SQLite result code and SQLite's message.
///
/// Privacy: neither `description` nor `debugDescription` nor the reflected children ever contain bound values
/// or the statement's SQL text (which may embed literals). SQLite's own message is included; it names tables,
/// columns and constraints, and for a syntax error quotes the token near which parsing failed. The SQL text is
/// kept only for `sqlForDebugging`, to be read deliberately.
public struct SQLiteError: Error, Sendable, Hashable {
    /// Why the operation failed: SQLite reported it, or this layer refused the call before SQLite ran it.
    public enum Reason: Sendable, Hashable {
        /// SQLite returned `code`; `message` is SQLite's error message.
        case sqlite
        /// `prepare` was given more than one statement; nothing was run (one statement per call).
        case multipleStatements
        /// The SQL text holds no statement (only whitespace, comments or semicolons).
        case emptyStatement
        /// The SQL text contains a NUL character, which would silently truncate it.
        case sqlContainsNUL
        /// A whole-statement binding supplied a different number of values than the statement has parameters.
        case argumentCountMismatch(expected: Int, actual: Int)
        /// A named binding used a parameter name that the statement does not contain.
        case unknownParameterName(String)
        /// A text column holds bytes that are not valid UTF-8; they are never repaired silently.
        case invalidUTF8Text(column: Int)
        /// The connection was closed before the call.
        case connectionClosed
        /// A pragma answered something this layer does not know how to represent.
        case unexpectedPragmaResult(pragma: String)
    }

    /// Why the operation failed.
    public let reason: Reason
    /// The extended result code (SQLite's own, or the closest one for a refusal by this layer).
    public let code: SQLiteResultCode
    /// SQLite's error message, or this layer's explanation of a refusal.
    public let message: String
    private let sql: String?

    /// Creates an error; `sql` is kept for `sqlForDebugging` only.
    public init(reason: Reason, code: SQLiteResultCode, message: String, sql: String? = nil) {
        self.reason = reason
        self.code = code
        self.message = message
        self.sql = sql
    }

    /// The primary result code (`SQLITE_CONSTRAINT` for `SQLITE_CONSTRAINT_UNIQUE`).
    public var primaryCode: SQLiteResultCode {
        code.primary
    }

    /// The macro name of the extended code, e.g. `SQLITE_CONSTRAINT_UNIQUE`.
    public var codeName: String {
        code.name
    }

    /// The SQL text of the failing statement, when known. It may contain literals: never log it by default.
    public var sqlForDebugging: String? {
        sql
    }
}

extension SQLiteError {
    /// The error SQLite reports for `resultCode` on `database`, reading the message before anything else runs.
    init(resultCode: Int32, database: OpaquePointer?, sql: String? = nil) {
        let extended = database.map { sqlite3_extended_errcode($0) } ?? resultCode
        // sqlite3_errmsg may describe an older failure when resultCode came from an API that does not set it.
        let sameFailure = extended & 0xFF == resultCode & 0xFF
        let code = sameFailure ? extended : resultCode
        let message: String
        if sameFailure, let database, let text = sqlite3_errmsg(database) {
            message = String(cString: text)
        } else {
            message = String(cString: sqlite3_errstr(code))
        }
        self.init(reason: .sqlite, code: SQLiteResultCode(rawValue: code), message: message, sql: sql)
    }

    static func refusal(_ reason: Reason, sql: String? = nil) -> SQLiteError {
        switch reason {
        case .sqlite:
            SQLiteError(reason: reason, code: .error, message: "SQLite reported an error", sql: sql)
        case .multipleStatements:
            SQLiteError(reason: reason, code: .misuse,
                        message: "only one SQL statement is accepted per call; more SQL follows the first", sql: sql)
        case .emptyStatement:
            SQLiteError(reason: reason, code: .misuse, message: "the SQL text holds no statement", sql: sql)
        case .sqlContainsNUL:
            SQLiteError(reason: reason, code: .misuse, message: "the SQL text contains a NUL character", sql: sql)
        case .argumentCountMismatch(let expected, let actual):
            SQLiteError(reason: reason, code: .range,
                        message: "the statement has \(expected) parameters but \(actual) values were given", sql: sql)
        case .unknownParameterName(let name):
            SQLiteError(reason: reason, code: .range, message: "the statement has no parameter named \(name)", sql: sql)
        case .invalidUTF8Text(let column):
            SQLiteError(reason: reason, code: .mismatch,
                        message: "column \(column) holds text that is not valid UTF-8", sql: sql)
        case .connectionClosed:
            SQLiteError(reason: reason, code: .misuse, message: "the connection is closed", sql: sql)
        case .unexpectedPragmaResult(let pragma):
            SQLiteError(reason: reason, code: .error, message: "PRAGMA \(pragma) answered an unknown value", sql: sql)
        }
    }
}

extension SQLiteError: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The code name, number and message; never bound values or SQL text.
    public var description: String {
        "\(code.name) (\(code.rawValue)): \(message)"
    }

    /// Same as `description`: debug output must not leak SQL literals either.
    public var debugDescription: String {
        description
    }

    /// Hides the SQL text from `dump` and other reflection-based printing.
    public var customMirror: Mirror {
        Mirror(self, children: ["reason": reason, "code": code, "message": message], displayStyle: .struct)
    }
}
