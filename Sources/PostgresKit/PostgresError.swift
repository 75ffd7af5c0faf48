/// Why a PostgreSQL operation failed. Each case names its cause as a stable rule; descriptions never contain a
/// password, a parameter value or, for the SQLSTATE classes whose messages echo data (`22`, `23`), the server's
/// message.
public enum PostgresError: Error, Sendable, Equatable, CustomStringConvertible {
    /// libpq refused the connection string (an unknown key, a malformed URI).
    case invalidConnectionString(reason: String)
    /// No connection could be made: the server is unreachable, refused, or the database does not exist.
    case cannotConnect(target: String, reason: String)
    /// The server refused the credentials (or asked for a password none was given for).
    case authenticationFailed(target: String)
    /// The server answered a statement with an error.
    case server(sqlState: String, message: String)
    /// The connection broke while a statement ran (terminated backend, network loss, server shutdown).
    case connectionLost(target: String)
    /// libpq reported a failure that has no SQLSTATE (out of memory, a protocol error).
    case client(reason: String)

    /// The stable snake_case name of the failure.
    public var rule: String {
        switch self {
        case .invalidConnectionString: "invalid_connection_string"
        case .cannotConnect: "cannot_connect"
        case .authenticationFailed: "authentication_failed"
        case .server(let state, _): PostgresError.rule(sqlState: state)
        case .connectionLost: "connection_lost"
        case .client: "client_failure"
        }
    }

    /// The SQLSTATE of a server error, nil for the other cases.
    public var sqlState: String? {
        if case .server(let state, _) = self { return state }
        return nil
    }

    /// Whether running the whole transaction again may succeed: a serialization failure (`40001`) or a deadlock
    /// (`40P01`), as PostgreSQL documents for `SERIALIZABLE` transactions.
    public var isSerializationFailure: Bool {
        sqlState == "40001" || sqlState == "40P01"
    }

    public var description: String {
        switch self {
        case .invalidConnectionString(let reason): "invalid PostgreSQL connection string: \(reason)"
        case .cannotConnect(let target, let reason): "cannot connect to PostgreSQL at \(target): \(reason)"
        case .authenticationFailed(let target):
            "PostgreSQL at \(target) refused the credentials (check the user and its password, PGPASSWORD or ~/.pgpass)"
        case .server(let state, let message): "PostgreSQL error \(state) (\(rule)): \(message)"
        case .connectionLost(let target): "the connection to PostgreSQL at \(target) was lost"
        case .client(let reason): "libpq: \(reason)"
        }
    }

    /// The rule of a SQLSTATE: the conditions a caller handles by name, else its class.
    static func rule(sqlState: String) -> String {
        switch sqlState {
        case "40001": "serialization_failure"
        case "40P01": "deadlock_detected"
        case "42883": "undefined_function"
        case "42501": "insufficient_privilege"
        case "3F000": "invalid_schema_name"
        case "42P01": "undefined_table"
        case "25006": "read_only_sql_transaction"
        case "57P01", "57P02", "57P03": "admin_shutdown"
        case "XX000": "internal_error"
        default: "sqlstate_\(sqlState.lowercased())"
        }
    }

    /// Whether the server's message for `sqlState` may be shown: data exceptions (`22`) and integrity constraint
    /// violations (`23`) quote the offending values, so only their SQLSTATE is kept.
    static func messageIsShareable(sqlState: String) -> Bool {
        !(sqlState.hasPrefix("22") || sqlState.hasPrefix("23"))
    }
}
