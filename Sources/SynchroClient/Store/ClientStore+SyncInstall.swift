import SQLiteKit
import SynchroStore

extension ClientStore {
    /// Applies `manifest` as ``applySchema(_:)`` does and runs `body` in the same schema-migration transaction
    /// (capture suppressed), so connect installs a fresh schema and its assignment atomically. With a prepared
    /// `migration` journal the installed schema is migrated by its plan in that same transaction (connect
    /// `replace` over an installed schema, `rebuild_local`, `schema_reset`), which also marks the journal applied.
    func applySchema(
        _ manifest: ClientManifest, migration: SchemaMigrationJournal? = nil,
        inSameTransaction body: (Connection) throws -> Void
    ) throws(ClientStoreError) {
        try withEngine { (connection) throws(ClientStoreError) in
            try withoutActuallyEscaping(body) { (escapable) throws(ClientStoreError) in
                var applier = SchemaApplier(manifest: manifest, clock: configuration.clock)
                applier.afterActivation = escapable
                applier.migration = migration
                _ = try applier.apply(on: connection)
            }
        }
        try withApplication { (connection) throws(ClientStoreError) in
            connection.updateSyncedTables(manifest.localSchema)
        }
    }
}
