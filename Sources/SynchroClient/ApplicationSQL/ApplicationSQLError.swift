import SQLiteKit
import SynchroStore

/// Why an application SQL call was refused or failed (`spec/client-store.md` §13, `seeds/001`). Each refusal
/// names the rule; nothing was changed. Descriptions name tables, columns and keywords only, never row values,
/// tokens or SQL literals.
public enum ApplicationSQLError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The SQL holds no statement.
    case emptyStatement
    /// More than one statement: one statement per call.
    case multipleStatements
    /// The SQL could not be tokenized or the write statement could not be read (an unterminated literal,
    /// comment or quoted name, or a malformed INSERT/UPDATE/DELETE head).
    case invalidSQL
    /// `BEGIN`, `COMMIT`, `END`, `ROLLBACK`, `SAVEPOINT` or `RELEASE`: use the SDK transaction methods.
    case transactionControl(keyword: String)
    /// `INSERT OR …`, `UPDATE OR …` or `REPLACE`: conflict algorithms have no portable capture semantics.
    case conflictClause(String)
    /// `INSERT … ON CONFLICT … DO …` into a synced table: an upsert is not a Synchro operation.
    case upsertOnSyncedTable(table: String)
    /// `query` was given a statement that can write (a write with `RETURNING` included).
    case writeInQuery
    /// `execute` was given a read; use `query`.
    case readInExecute
    /// A write to Synchro metadata, queue or bookkeeping tables.
    case reservedTableWrite(table: String)
    /// DDL that creates, drops or alters a synced table, its indexes or triggers.
    case syncedTableDDL(table: String)
    /// DDL on a reserved object (`_synchro_…`, `grdb_migrations`), a capture trigger or SQLite's catalog.
    case reservedObjectDDL(name: String)
    /// `ATTACH` or `DETACH`.
    case attachDetach
    /// A pragma with an argument other than the schema-inspection pragmas.
    case pragmaWithArgument(pragma: String)
    /// An INSERT into a synced table ran without its own capture context (for example from a trigger on a
    /// local table), so its authored fields are unknown; the statement was aborted.
    case insertWithoutCaptureContext
    /// An UPDATE changed a synced row's primary key.
    case primaryKeyChange
    /// Capture needs a verified active schema (schema version, hash and archive row).
    case captureRequiresVerifiedSchema
    /// A synced column holds a value whose storage class does not fit its portable type.
    case captureStorageTypeInvalid
    /// Capture context rows remained at commit; the transaction was rolled back.
    case captureContextRemains
    /// An authored mask was invalid (operation, empty or repeated names).
    case invalidAuthoredMask(reason: String)
    /// A transaction method was called inside an application transaction callback (Swift exposes no nesting).
    case nestedTransaction
    /// A transaction handle was used after its callback returned.
    case transactionEnded
    /// The store is closed.
    case closed
    /// Another SQLite failure (a constraint, a syntax error); the message names no values.
    case sqlite(SQLiteError)
    /// A store failure during the managed write (for example a ledger integrity failure in atomic validation).
    case store(ClientStoreError)

    /// Stable snake_case name of the rule.
    public var rule: String {
        switch self {
        case .emptyStatement: "empty_statement"
        case .multipleStatements: "multiple_statements"
        case .invalidSQL: "invalid_sql"
        case .transactionControl: "transaction_control"
        case .conflictClause: "conflict_clause"
        case .upsertOnSyncedTable: "upsert_on_synced_table"
        case .writeInQuery: "write_in_query"
        case .readInExecute: "read_in_execute"
        case .reservedTableWrite: "reserved_table_write"
        case .syncedTableDDL: "synced_table_ddl"
        case .reservedObjectDDL: "reserved_object_ddl"
        case .attachDetach: "attach_detach"
        case .pragmaWithArgument: "pragma_with_argument"
        case .insertWithoutCaptureContext: "insert_without_capture_context"
        case .primaryKeyChange: "primary_key_change"
        case .captureRequiresVerifiedSchema: "capture_requires_verified_schema"
        case .captureStorageTypeInvalid: "capture_storage_type_invalid"
        case .captureContextRemains: "capture_context_remains"
        case .invalidAuthoredMask: "invalid_authored_mask"
        case .nestedTransaction: "nested_transaction"
        case .transactionEnded: "transaction_ended"
        case .closed: "closed"
        case .sqlite: "sqlite"
        case .store: "store"
        }
    }

    public var description: String {
        switch self {
        case .emptyStatement: "the SQL holds no statement"
        case .multipleStatements: "only one SQL statement is accepted per call"
        case .invalidSQL: "application SQL is invalid"
        case .transactionControl(let keyword): "\(keyword) is transaction control; use the SDK transaction methods"
        case .conflictClause(let clause): "\(clause) conflict handling is not supported for application writes"
        case .upsertOnSyncedTable(let table): "an upsert into synced table \(table) is not a Synchro operation"
        case .writeInQuery: "query accepts only read-only statements"
        case .readInExecute: "execute accepts only writes; use query for reads"
        case .reservedTableWrite(let table): "application SQL may not write \(table)"
        case .syncedTableDDL(let table): "application SQL may not change the definition of synced table \(table)"
        case .reservedObjectDDL(let name): "application SQL may not create, drop or alter \(name)"
        case .attachDetach: "ATTACH and DETACH are not allowed"
        case .pragmaWithArgument(let pragma): "PRAGMA \(pragma) with an argument is not allowed"
        case .insertWithoutCaptureContext: "synced insert has no authored capture context"
        case .primaryKeyChange: "synchro primary key changes are not supported"
        case .captureRequiresVerifiedSchema: "synchro capture requires verified schema metadata"
        case .captureStorageTypeInvalid: "synchro capture storage type is invalid"
        case .captureContextRemains: "application write left capture context before commit"
        case .invalidAuthoredMask(let reason): "authored write mask is invalid: \(reason)"
        case .nestedTransaction: "transactions do not nest; use the transaction handle"
        case .transactionEnded: "the transaction handle was used after its transaction ended"
        case .closed: "the client store is closed"
        case .sqlite(let error): "SQLite: \(error)"
        case .store(let error): "\(error)"
        }
    }

    /// The typed capture error for a trigger's `RAISE(ABORT, …)` message, else the SQLite error as is.
    static func fromStatementFailure(_ error: SQLiteError) -> ApplicationSQLError {
        guard error.primaryCode == .constraint else { return .sqlite(error) }
        switch error.message {
        case "synced insert has no authored capture context": return .insertWithoutCaptureContext
        case "synchro primary key changes are not supported": return .primaryKeyChange
        case "synchro capture requires verified schema metadata": return .captureRequiresVerifiedSchema
        case "synchro capture storage type is invalid": return .captureStorageTypeInvalid
        default: return .sqlite(error)
        }
    }
}
