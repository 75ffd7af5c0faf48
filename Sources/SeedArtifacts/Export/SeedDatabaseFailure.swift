/// Why a database source (upstream's `synchro_portable_seed_*` functions in PostgreSQL) stopped an export. Each
/// case names its cause and how to fix it; none carries a password, a connection string, a token or a row value
/// (`target` is `host:port/database as user`, as the database client reports it).
public enum SeedDatabaseFailure: Sendable, Equatable, CustomStringConvertible {
    /// No connection could be made (unreachable, refused, no such database).
    case cannotConnect(target: String, reason: String)
    /// The server refused the credentials.
    case authenticationFailed(target: String)
    /// The login may not execute the export functions (SQLSTATE `42501`): it is not a member of `synchro_seed`.
    case notSeedExporter(target: String)
    /// The `synchro` schema or one of the export functions is missing (`3F000`, `42883`), or has another signature.
    case interfaceMissing(function: String)
    /// The `synchro_pg` extension is installed in a version whose export interface this release does not speak.
    case interfaceVersion(found: String, supported: String)
    /// The export transaction hit a serialization failure (`40001`, `40P01`); the whole export may be retried.
    case serializationFailure
    /// Every attempt the retry policy allows ended in a serialization failure.
    case retriesExhausted(attempts: Int)
    /// The connection broke during the export (a terminated backend, a network loss, a server shutdown).
    case connectionLost(target: String)
    /// A function answered with a protocol error object (`{"error":{"code",…}}`) instead of a result.
    case refused(code: String, message: String)
    /// A function returned SQL NULL where a JSON result was due.
    case nullResult
    /// Any other SQL error, by SQLSTATE (its message is withheld when it may quote data).
    case server(sqlState: String, rule: String, message: String)

    /// The stable snake_case rule name.
    public var rule: String {
        switch self {
        case .cannotConnect: "cannot_connect"
        case .authenticationFailed: "authentication_failed"
        case .notSeedExporter: "not_seed_exporter"
        case .interfaceMissing: "export_function_missing"
        case .interfaceVersion: "extension_version_unsupported"
        case .serializationFailure: "serialization_failure"
        case .retriesExhausted: "retries_exhausted"
        case .connectionLost: "connection_lost"
        case .refused(let code, _): code
        case .nullResult: "null_result"
        case .server(_, let rule, _): rule
        }
    }

    public var description: String {
        switch self {
        case .cannotConnect(let target, let reason): "cannot connect to PostgreSQL at \(target): \(reason)"
        case .authenticationFailed(let target):
            "PostgreSQL at \(target) refused the credentials (check the user and its password: PGPASSWORD or ~/.pgpass)"
        case .notSeedExporter(let target):
            "the login at \(target) may not run the export functions: grant it the synchro_seed role "
                + "(GRANT synchro_seed TO <login>)"
        case .interfaceMissing(let function):
            "\(function) does not exist: the synchro_pg extension (0.4) is not installed in this database, "
                + "or its functions were dropped or have other arguments"
        case .interfaceVersion(let found, let supported):
            "the synchro_pg extension is version \(found); this seedkit speaks the export interface of \(supported)"
        case .serializationFailure: "the export transaction hit a serialization failure"
        case .retriesExhausted(let attempts):
            "the export transaction hit a serialization failure on each of \(attempts) attempts; try again later"
        case .connectionLost(let target): "the connection to PostgreSQL at \(target) was lost during the export"
        case .refused(let code, let message): "the function refused: \(code) (\(message))"
        case .nullResult: "the function returned SQL NULL"
        case .server(let state, let rule, let message): "PostgreSQL error \(state) (\(rule)): \(message)"
        }
    }
}
