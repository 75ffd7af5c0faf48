import SQLiteKit
import SynchroStore
import SynchroProtocol

/// What ``ClientStore/applySchema(_:)`` did.
public enum SchemaApplicationOutcome: Sendable, Equatable {
    /// The fresh store now has the manifest's synced tables, indexes, triggers and metadata.
    case applied
    /// The same manifest was already active; its tables and triggers were verified and reinstalled.
    case alreadyActive
}

/// Applies a verified manifest to a store that has none yet (`spec/client-store.md` §5, §10 plan steps
/// `create_table`, `create_index`, `reinstall_capture`, `activate_manifest`), in one schema-migration transaction.
///
/// Changing an active schema is a server schema action (compatible migration or reset) and belongs to the sync
/// loop; here a different active schema is refused. Tables that are not in the manifest are never touched.
struct SchemaApplier {
    let manifest: ClientManifest
    let clock: ClientClock
    /// Extra work committed in the same transaction after activation (connect installs its assignment here, so
    /// a fresh store never has a schema without its generation and scopes).
    var afterActivation: ((Connection) throws -> Void)? = nil
    /// The prepared journal of a connect schema action over an installed schema (`replace`, `rebuild_local`,
    /// `schema_reset`): the active schema is then migrated by the journal's plan instead of refused.
    var migration: SchemaMigrationJournal?

    func apply(on connection: Connection) throws(ClientStoreError) -> SchemaApplicationOutcome {
        try mappingStoreErrors {
            try EngineTransactions.schemaMigration(on: connection) { connection in
                let reference = manifest.reference
                let activeVersion = try MetaStore.integer(.schemaVersion, on: connection)
                let activeHash = try MetaStore.value(.schemaHash, on: connection) ?? ""
                let isFresh = activeVersion <= 0 || activeHash.isEmpty
                let isSame = activeVersion == reference.version && activeHash.exactlyEquals(reference.hash)
                if !isFresh && (!isSame || migration?.isReset == true) {
                    guard let migration else {
                        throw ClientStoreError.schemaApplication(
                            .differentSchemaActive(version: activeVersion, hash: activeHash))
                    }
                    try migrate(migration, on: connection)
                    return .applied
                }
                try createTables(on: connection, active: !isFresh)
                try activate(on: connection)
                try CaptureTriggerInstaller.install(manifest.localSchema, on: connection)
                try afterActivation?(connection)
                return isFresh ? .applied : .alreadyActive
            }
        }
    }

    /// Runs the journal's migration: the plan re-derived and checked against the journal, its operations (the
    /// connect's assignment in `apply_scope_state`), and the journal marked applied, all in this transaction.
    private func migrate(_ migration: SchemaMigrationJournal, on connection: Connection) throws {
        try migration.verifyPlan(on: connection)
        let sourceReference = try SchemaReference(
            version: try MetaStore.integer(.schemaVersion, on: connection),
            hash: try MetaStore.value(.schemaHash, on: connection) ?? "")
        let source = try LocalSchemaJSON.decode(try MetaStore.value(.localSchema, on: connection) ?? "[]")
        let plan = try SchemaMigrationPlan.derive(
            from: source, sourceReference: sourceReference, to: manifest, reset: migration.isReset)
        let executor = SchemaMigrationExecutor(
            connection: connection, source: source, target: manifest,
            activate: { connection in try activate(on: connection) },
            applyScopeState: { connection in
                try migration.applyScopeState(on: connection)
                try afterActivation?(connection)
            })
        try executor.run(plan)
        try migration.markApplied(on: connection)
    }

    /// Creates each table (or verifies an existing one) and its indexes. On a fresh store an existing table must
    /// have exactly the synced layout; when the manifest is already active, a table may carry what compatible
    /// migrations left (appended, nullable columns), so the migration's physical check applies.
    private func createTables(on connection: Connection, active: Bool) throws {
        for table in manifest.localSchema {
            let existing = try connection.columns(of: table.tableName)
            if existing.isEmpty {
                try connection.execute(SyncedTableDDL.createTable(table))
            } else if active ? !(try PhysicalTable.matches(table, on: connection))
                : !SyncedTableDDL.matches(existing, table) {
                throw ClientStoreError.schemaApplication(.tableConflict(table.tableName))
            }
            for index in table.indexes {
                try ManifestIndexOwnership.create(index, on: table, connection: connection)
            }
        }
    }

    /// `activate_manifest`: schema reference, archive row, local schema and manifest JSON.
    private func activate(on connection: Connection) throws {
        let reference = manifest.reference
        try MetaStore.set(.schemaVersion, String(reference.version), on: connection)
        try MetaStore.set(.schemaHash, reference.hash, on: connection)
        try SchemaArchive.archive(
            version: reference.version, hash: reference.hash, tables: manifest.localSchema,
            createdAt: clock.timestamp(), on: connection)
        try MetaStore.set(.localSchema, try LocalSchemaJSON.encode(manifest.localSchema), on: connection)
        try MetaStore.set(.schemaManifest, manifest.canonicalJSON, on: connection)
    }
}
