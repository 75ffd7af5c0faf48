import SQLiteKit
import SystemKit

/// Opening a database file in the client layout exactly as the engine does (`spec/client-store.md` §1, §2): the
/// engine connection's settings, the remaining migration steps, the verified final layout and the stored local
/// schema. The engine's ``ClientStore`` and the device-style seed installer both open files through here, so an
/// installed seed has been migrated by the same code that later syncs it.
package enum StoreFile {
    /// An engine connection on a migrated, verified file.
    package struct Opened {
        /// The engine connection (WAL, foreign keys, busy timeout), owned by the caller.
        package let connection: Connection
        /// The layout the file had before this open migrated it.
        package let layout: StoreLayout
        /// The synced tables `_synchro_meta.local_schema` declares (empty before a schema is applied).
        package let localSchema: [LocalSchemaTable]
    }

    /// Opens (creating when missing) the file at `path` with the engine connection, runs the remaining migration
    /// steps and verifies the result; `clock` stamps the rows the migration writes.
    /// A new file is created with mode 0600 (its `-wal` and `-shm` follow): a store holds cursors and row values.
    ///
    /// `prepare` runs on the connection before the first migration statement: a verifier of an untrusted file uses
    /// it to switch the file's views off and to bound the work (``SeedArtifacts``' budget).
    package static func open(
        path: String, clock: ClientClock,
        prepare: (Connection) throws(SQLiteError) -> Void = { _ in }
    ) throws(ClientStoreError) -> Opened {
        let connection: Connection
        do {
            // A `file:` URI (the installer's in-memory copy) or `:memory:` names no file to create.
            if !path.hasPrefix("file:") && path != ":memory:" { try PrivateFiles.createIfMissing(path) }
        } catch {
            throw .sqlite(SQLiteError(reason: .sqlite, code: .cannotOpen, message: "\(error)"))
        }
        do {
            connection = try ConnectionConventions.openEngine(path: path)
        } catch {
            throw .sqlite(error)
        }
        do {
            try prepare(connection)
        } catch {
            connection.close()
            throw .sqlite(error)
        }
        do {
            let layout = try StoreMigrator(connection: connection, clock: clock).migrate()
            let tables = try storedLocalSchema(on: connection)
            return Opened(connection: connection, layout: layout, localSchema: tables)
        } catch {
            connection.close()
            throw error
        }
    }

    /// Opens and migrates the file at `path` as ``open(path:clock:)`` does, then closes it the way the engine
    /// closes a store (a truncating checkpoint first), as a device does when its SDK opens a copied seed.
    package static func migrate(
        path: String, clock: ClientClock = .system,
        prepare: (Connection) throws(SQLiteError) -> Void = { _ in }
    ) throws(ClientStoreError) -> StoreLayout {
        let opened = try open(path: path, clock: clock, prepare: prepare)
        _ = try? opened.connection.checkpoint(.truncate)
        opened.connection.close()
        return opened.layout
    }

    /// The synced tables `_synchro_meta.local_schema` declares on `connection`.
    package static func storedLocalSchema(on connection: Connection) throws(ClientStoreError) -> [LocalSchemaTable] {
        let encoded = try mappingStoreErrors { try MetaStore.value(.localSchema, on: connection) }
        guard let encoded else { return [] }
        return try LocalSchemaJSON.decode(encoded)
    }
}
