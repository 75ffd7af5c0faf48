import SQLiteKit

extension ClientStore {
    /// Applies `manifest` as ``applySchema(_:)`` does and runs `body` in the same schema-migration transaction
    /// (capture suppressed), so connect installs a fresh schema and its assignment atomically. With
    /// `migratingActiveSchema` a different installed schema is migrated additively in that same transaction
    /// (connect `replace` over an installed schema and `rebuild_local`).
    func applySchema(
        _ manifest: ClientManifest, migratingActiveSchema: Bool = false,
        inSameTransaction body: (Connection) throws -> Void
    ) throws(ClientStoreError) {
        try withEngine { (connection) throws(ClientStoreError) in
            try withoutActuallyEscaping(body) { (escapable) throws(ClientStoreError) in
                var applier = SchemaApplier(manifest: manifest, clock: configuration.clock)
                applier.afterActivation = escapable
                applier.migratesActiveSchema = migratingActiveSchema
                _ = try applier.apply(on: connection)
            }
        }
        try withApplication { (connection) throws(ClientStoreError) in
            connection.updateSyncedTables(manifest.localSchema)
        }
    }
}
