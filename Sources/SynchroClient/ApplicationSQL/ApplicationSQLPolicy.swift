import SQLiteKit
import SynchroStore

/// The authorizer rules of the application connection (`spec/client-store.md` §13.2), enforced only while an
/// application statement is compiled or stepped, so the SDK's own statements (transaction control, capture
/// context, atomic group state) need no exception window.
///
/// SQLite reports resolved target objects, so aliases, CTEs, views and trigger bodies cannot hide what a
/// statement changes; writes made by a trigger carry the trigger's name as accessor.
final class ApplicationSQLPolicy {
    /// Lower-cased synced table names.
    private(set) var syncedTables: Set<String> = []
    /// Lower-cased capture trigger names.
    private(set) var captureTriggers: Set<String> = []
    /// Whether an application statement is being compiled or run.
    private var isEnforcing = false
    /// The first rule an application statement broke, reported instead of SQLite's bare `not authorized`.
    private(set) var denial: ApplicationSQLError?

    /// The pragmas that take an argument but only inspect schema or integrity.
    private static let inspectionPragmas: Set<String> = [
        "table_info", "table_xinfo", "index_info", "index_xinfo", "index_list", "foreign_key_list",
        "integrity_check", "quick_check",
    ]

    /// The two ledger tables the capture triggers write.
    private static let captureTargets: Set<String> = ["_synchro_pending_changes", "_synchro_mutation_values"]

    func update(syncedTables names: [String]) {
        syncedTables = Set(names.map(SQLName.normalized))
        captureTriggers = Set(names.flatMap(CaptureTriggerSQL.names(forTable:)).map(SQLName.normalized))
    }

    /// Runs `body` with the rules enforced.
    func enforcing<Result, Failure: Error>(_ body: () throws(Failure) -> Result) throws(Failure) -> Result {
        isEnforcing = true
        denial = nil
        defer { isEnforcing = false }
        return try body()
    }

    func authorize(_ request: AuthorizationRequest) -> AuthorizerDecision {
        guard isEnforcing else { return .allow }
        guard let violation = violation(request) else { return .allow }
        if denial == nil {
            denial = violation
        }
        return .deny
    }

    private func violation(_ request: AuthorizationRequest) -> ApplicationSQLError? {
        switch request.action {
        case .insert(let table), .delete(let table), .update(let table, _):
            return writeViolation(table: table, accessor: request.accessor)
        case .createTable(let name, _), .dropTable(let name, _), .createVirtualTable(let name, _),
             .dropVirtualTable(let name, _), .createView(let name, _), .dropView(let name, _):
            return ddlViolation(name)
        case .alterTable(_, let table):
            return ddlViolation(table)
        case .createIndex(let name, let table, _), .dropIndex(let name, let table, _),
             .createTrigger(let name, let table, _), .dropTrigger(let name, let table, _):
            return ddlViolation(name) ?? ddlViolation(table)
        case .attach, .detach:
            return .attachDetach
        case .transaction(let operation):
            return .transactionControl(keyword: operation)
        case .savepoint(let operation, _):
            return .transactionControl(keyword: operation == "BEGIN" ? "SAVEPOINT" : operation)
        case .pragma(let name, let argument):
            guard argument != nil, !Self.inspectionPragmas.contains(SQLName.normalized(name)) else { return nil }
            return .pragmaWithArgument(pragma: name)
        default:
            return nil
        }
    }

    /// Catalog writes are the side effects of authorized DDL; reserved tables take only the capture triggers'
    /// ledger writes.
    private func writeViolation(table: String, accessor: String?) -> ApplicationSQLError? {
        if SQLName.isCatalog(table) || !SQLName.isReserved(table) {
            return nil
        }
        if let accessor, captureTriggers.contains(SQLName.normalized(accessor)),
           Self.captureTargets.contains(SQLName.normalized(table)) {
            return nil
        }
        return .reservedTableWrite(table: table)
    }

    private func ddlViolation(_ name: String) -> ApplicationSQLError? {
        let key = SQLName.normalized(name)
        if syncedTables.contains(key) {
            return .syncedTableDDL(table: name)
        }
        if SQLName.isReserved(name) || captureTriggers.contains(key) || SQLName.isCatalog(name) {
            return .reservedObjectDDL(name: name)
        }
        return nil
    }
}
