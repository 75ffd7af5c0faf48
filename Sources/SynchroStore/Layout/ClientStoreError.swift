import SQLiteKit
import SynchroProtocol
import SystemKit

/// Why a database file's Synchro layout cannot be opened (`spec/client-store.md` §2).
public enum StoreLayoutProblem: Sendable, Equatable, CustomStringConvertible {
    /// The file holds `_synchro_*` tables but no `grdb_migrations` table (for example the Kotlin SDK's
    /// `user_version` layout), so which steps were applied is unknown.
    case synchroTablesWithoutMigrationTable(userVersion: Int32)
    /// `grdb_migrations` records known steps that are not a prefix of the migration sequence; no upstream
    /// release writes such a file.
    case migrationsNotAPrefix(applied: [String])
    /// After migrating, a table of the final layout is missing.
    case missingTable(String)
    /// After migrating, a table of the final layout lacks columns.
    case missingColumns(table: String, columns: [String])

    /// Stable snake_case name of the broken rule.
    public var rule: String {
        switch self {
        case .synchroTablesWithoutMigrationTable: "synchro_tables_without_migration_table"
        case .migrationsNotAPrefix: "migrations_not_a_prefix"
        case .missingTable: "missing_table"
        case .missingColumns: "missing_columns"
        }
    }

    public var description: String {
        switch self {
        case .synchroTablesWithoutMigrationTable(let userVersion):
            "the file has Synchro tables but no grdb_migrations table (user_version \(userVersion))"
        case .migrationsNotAPrefix(let applied):
            "grdb_migrations records \(applied.count) known steps that are not a prefix of the migration sequence"
        case .missingTable(let table):
            "the migrated layout lacks table \(table)"
        case .missingColumns(let table, let columns):
            "the migrated table \(table) lacks columns \(columns.joined(separator: ", "))"
        }
    }
}

/// A failure of the local store: opening, migrating, schema application, capture bookkeeping.
///
/// Descriptions name tables, columns, keys and rules only, never row values, tokens or SQL literals.
public enum ClientStoreError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file's layout is not one this release can open or migrate.
    case unknownLayout(StoreLayoutProblem)
    /// The file records migration steps this release does not know: it was written by a newer client.
    case newerLayout(unknownMigrations: [String])
    /// A migration step failed; nothing of that step was committed.
    case migrationFailed(migration: String, SQLiteError)
    /// A migration step left foreign-key violations, so it was rolled back.
    case migrationForeignKeyViolation(migration: String, table: String)
    /// Capture triggers must be regenerated but `schema_version`/`schema_hash` do not name a verified schema.
    case captureUpgradeRequiresVerifiedSchema
    /// `_synchro_meta.local_schema` is not a JSON array of LocalSchemaTable objects.
    case invalidLocalSchema(reason: String)
    /// A schema could not be applied.
    case schemaApplication(SchemaApplicationError)
    /// A stored ledger row or value row breaks the ledger's shape rules.
    case ledgerIntegrity(LedgerIntegrityFailure)
    /// An engine operation was called from inside an application transaction callback, which would wait on
    /// the transaction's own write lock; finish the callback first (client contract, public SDK surface).
    case calledInsideApplicationTransaction
    /// The configuration cannot be used (for example an empty client ID).
    case invalidConfiguration(reason: String)
    /// Another open store — in another process or this one — owns the file (``StoreOwnerLock``); refused at
    /// once, never waited for. `holderPID` is the owner's process ID when it recorded one.
    case storeInUse(path: String, holderPID: Int32?)
    /// The owner lock file beside the store could not be created or locked.
    case ownerLockUnavailable(path: String, errno: Int32)
    /// The store was closed.
    case closed
    /// SQLite failed.
    case sqlite(SQLiteError)

    /// Stable snake_case name of the broken rule.
    public var rule: String {
        switch self {
        case .unknownLayout(let problem): "unknown_layout.\(problem.rule)"
        case .newerLayout: "newer_layout"
        case .migrationFailed: "migration_failed"
        case .migrationForeignKeyViolation: "migration_foreign_key_violation"
        case .captureUpgradeRequiresVerifiedSchema: "capture_upgrade_requires_verified_schema"
        case .invalidLocalSchema: "invalid_local_schema"
        case .schemaApplication(let error): "schema_application.\(error.rule)"
        case .ledgerIntegrity(let failure): "ledger_integrity.\(failure.rule)"
        case .calledInsideApplicationTransaction: "called_inside_application_transaction"
        case .invalidConfiguration: "invalid_configuration"
        case .storeInUse: "store_in_use"
        case .ownerLockUnavailable: "owner_lock_unavailable"
        case .closed: "closed"
        case .sqlite: "sqlite"
        }
    }

    public var description: String {
        switch self {
        case .unknownLayout(let problem): "unknown database layout: \(problem)"
        case .newerLayout(let unknown):
            "the database was migrated by a newer client (unknown steps: \(unknown.joined(separator: ", ")))"
        case .migrationFailed(let migration, let error): "migration \(migration) failed: \(error)"
        case .migrationForeignKeyViolation(let migration, let table):
            "migration \(migration) left a foreign-key violation in \(table)"
        case .captureUpgradeRequiresVerifiedSchema:
            "capture upgrade requires verified schema metadata (schema_version > 0 and a schema_hash)"
        case .invalidLocalSchema(let reason): "local_schema is invalid: \(reason)"
        case .schemaApplication(let error): "schema application failed: \(error)"
        case .ledgerIntegrity(let failure): "mutation ledger integrity: \(failure)"
        case .calledInsideApplicationTransaction:
            "an engine operation was called inside an application transaction callback"
        case .invalidConfiguration(let reason): "invalid configuration: \(reason)"
        case .storeInUse(let path, let holder):
            "the store \(path) is in use by \(holder.map { "process \($0)" } ?? "another owner") (store_in_use)"
        case .ownerLockUnavailable(let path, let errno):
            SystemError(operation: "lock", path: path, code: errno).description
        case .closed: "the client store is closed"
        case .sqlite(let error): "SQLite: \(error)"
        }
    }
}

/// Why a manifest cannot be applied to the local store (`spec/client-store.md` §5).
public enum SchemaApplicationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The manifest failed validation or its hash check.
    case invalidManifest(ManifestError)
    /// Another schema is active; changing it is a schema action of the sync loop, not an initial application.
    case differentSchemaActive(version: Int64, hash: String)
    /// A synced table name is reserved (`_synchro_…`, `sqlite_…`, `grdb_migrations`).
    case reservedTableName(String)
    /// A manifest index name is in the client's own namespaces (`_synchro_…`, `idx_synchro_…`, `sqlite_…`).
    case reservedIndexName(table: String, index: String)
    /// A manifest index name is already a table's or another index's name (SQLite compares them without case).
    case duplicateIndexName(table: String, index: String)
    /// Two manifest tables map to the same local table name (SQLite names are case-insensitive).
    case duplicateTableName(String)
    /// A table with a synced table's name exists with a different layout (a local-only table is never altered).
    case tableConflict(String)
    /// An index with a manifest index's name exists and is not that manifest index (the application's own, or
    /// another table's): it is never adopted — `CREATE INDEX IF NOT EXISTS` used to skip it, and the next version
    /// without that index then dropped it (issue #19).
    case indexNameTaken(table: String, index: String)
    /// A compatible schema action (`replace`, `rebuild_local`) carries a change that no Class 2 or Class 3
    /// transition contains (`spec/wire-protocol.md` §12.2), named by the server's rule (`table_removed`,
    /// `field_removed`, `field_renamed`, `field_type_changed`, `nullability_tightened`, `key_changed`, …): the
    /// server breached the contract, and nothing is written.
    case incompatibleChange(table: String, rule: String)

    /// Stable snake_case name of the broken rule.
    public var rule: String {
        switch self {
        case .invalidManifest: "invalid_manifest"
        case .differentSchemaActive: "different_schema_active"
        case .reservedTableName: "reserved_table_name"
        case .reservedIndexName: "reserved_index_name"
        case .duplicateIndexName: "duplicate_index_name"
        case .duplicateTableName: "duplicate_table_name"
        case .tableConflict: "table_conflict"
        case .indexNameTaken: "index_name_taken"
        case .incompatibleChange: "incompatible_change"
        }
    }

    public var description: String {
        switch self {
        case .invalidManifest(let error): "the manifest is invalid: \(error)"
        case .differentSchemaActive(let version, let hash): "schema \(version)/\(hash) is already active"
        case .reservedTableName(let name): "synced table name \(name) is reserved"
        case .reservedIndexName(let table, let index): "index \(index) of table \(table) has a reserved name"
        case .duplicateIndexName(let table, let index):
            "index \(index) of table \(table) has the name of another table or index"
        case .duplicateTableName(let name): "two manifest tables use the local name \(name)"
        case .tableConflict(let name): "table \(name) exists with a different layout"
        case .indexNameTaken(let table, let index):
            "an index named \(index) (of table \(table) in the manifest) already exists and is not the manifest's"
        case .incompatibleChange(let table, let rule):
            "a compatible schema action changes table \(table) incompatibly (\(rule))"
        }
    }
}

/// A stored ledger row that breaks the ledger's shape (`spec/client-store.md` §4.4, §4.5).
public enum LedgerIntegrityFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// `operation` is not insert, update or delete.
    case unknownOperation(mutationID: String)
    /// `lifecycle_state` is not a known state.
    case unknownLifecycleState(mutationID: String)
    /// `source_kind` is not a known kind.
    case unknownSourceKind(mutationID: String)
    /// A value row's kind, populated column and logical type disagree, or a real is not finite.
    case storedValueShape(mutationID: String, fieldID: String)
    /// The row has some but not all protocol bindings (table ID, key field, key type, authored schema).
    case partialBindings(mutationID: String)
    /// A captured value has no RFC 8785 form (a Unicode noncharacter), so it cannot be measured or sent.
    case valueNotIJSON(mutationID: String)
    /// The row cannot be rendered as a protocol mutation (a rule of the push validation).
    case notAProtocolMutation(mutationID: String, rule: String)

    /// Stable snake_case name of the broken rule.
    public var rule: String {
        switch self {
        case .unknownOperation: "unknown_operation"
        case .unknownLifecycleState: "unknown_lifecycle_state"
        case .unknownSourceKind: "unknown_source_kind"
        case .storedValueShape: "stored_value_shape"
        case .partialBindings: "partial_bindings"
        case .valueNotIJSON: "value_not_i_json"
        case .notAProtocolMutation: "not_a_protocol_mutation"
        }
    }

    public var description: String {
        switch self {
        case .unknownOperation(let id): "mutation \(id) has an unknown operation"
        case .unknownLifecycleState(let id): "mutation \(id) has an unknown lifecycle state"
        case .unknownSourceKind(let id): "mutation \(id) has an unknown source kind"
        case .storedValueShape(let id, let field): "mutation \(id) stores field \(field) in an invalid shape"
        case .partialBindings(let id): "mutation \(id) has only some protocol bindings"
        case .valueNotIJSON(let id): "mutation \(id) holds a value without an RFC 8785 form"
        case .notAProtocolMutation(let id, let rule): "mutation \(id) is not a protocol mutation (\(rule))"
        }
    }
}

/// Runs `body`, passing store errors through and wrapping SQLite failures, so helpers that mix typed-throwing
/// SQLite calls with store checks report one error type.
package func mappingStoreErrors<Result>(_ body: () throws -> Result) throws(ClientStoreError) -> Result {
    do {
        return try body()
    } catch let error as ClientStoreError {
        throw error
    } catch let error as SQLiteError {
        throw .sqlite(error)
    } catch {
        // Only this module's own error types reach here; their descriptions carry no row values.
        throw .sqlite(SQLiteError(reason: .sqlite, code: .error, message: String(describing: error)))
    }
}
