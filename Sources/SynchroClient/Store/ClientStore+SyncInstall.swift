import SQLiteKit

extension ClientStore {
    /// Applies `manifest` as ``applySchema(_:)`` does and runs `body` in the same schema-migration transaction
    /// (capture suppressed), so connect installs a fresh schema and its assignment atomically.
    func applySchema(
        _ manifest: ClientManifest, inSameTransaction body: (Connection) throws -> Void
    ) throws(ClientStoreError) {
        try withEngine { (connection) throws(ClientStoreError) in
            try withoutActuallyEscaping(body) { (escapable) throws(ClientStoreError) in
                var applier = SchemaApplier(manifest: manifest, clock: configuration.clock)
                applier.afterActivation = escapable
                _ = try applier.apply(on: connection)
            }
        }
        try withApplication { (connection) throws(ClientStoreError) in
            connection.updateSyncedTables(manifest.localSchema)
        }
    }
}
