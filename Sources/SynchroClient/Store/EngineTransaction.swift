import SQLiteKit
import SynchroStore

/// One transaction on the engine connection, handed to an engine callback (server apply, schema work).
///
/// Unlike ``ApplicationTransaction`` it is not restricted: it is how the engine (and tests standing in for the
/// sync loop) writes synced tables and Synchro metadata. It is valid only inside its callback. It is `package`,
/// never public: an application that could write here would bypass capture and forge server state (client
/// contract, "Public native SDK surface").
package final class EngineTransaction {
    let connection: Connection
    private(set) var isActive = true

    init(connection: Connection) {
        self.connection = connection
    }

    func end() {
        isActive = false
    }

    /// Runs one statement and returns the number of rows it changed.
    @discardableResult
    package func execute(_ sql: String, _ arguments: [SQLiteValue] = []) throws(ClientStoreError) -> Int {
        try requireActive()
        do {
            try connection.run(sql, arguments)
            return connection.changes
        } catch {
            throw .sqlite(error)
        }
    }

    /// Runs one statement and returns its rows.
    package func query(_ sql: String, _ arguments: [SQLiteValue] = []) throws(ClientStoreError) -> [Row] {
        try requireActive()
        do {
            return try Row.collect(connection.prepare(sql), arguments)
        } catch {
            throw .sqlite(error)
        }
    }

    /// The value of a `_synchro_meta` key.
    package func meta(_ key: MetaKey) throws(ClientStoreError) -> String? {
        try requireActive()
        do {
            return try MetaStore.value(key, on: connection)
        } catch {
            throw .sqlite(error)
        }
    }

    private func requireActive() throws(ClientStoreError) {
        guard isActive else { throw .closed }
    }
}

/// The engine's transaction shapes (`spec/client-store.md` §1, §3).
enum EngineTransactions {
    /// A server-apply transaction: `sync_lock` is `'1'` from its start to just before commit, so the capture
    /// triggers do not fire for anything it writes (no echo); a rollback restores `'0'` with everything else.
    static func serverApply<Result>(
        on connection: Connection, _ body: (Connection) throws -> Result
    ) throws -> Result {
        try connection.transaction(kind: .immediate) {
            try MetaStore.set(.syncLock, "1", on: connection)
            let result = try body(connection)
            try MetaStore.set(.syncLock, "0", on: connection)
            return result
        }
    }

    /// A schema-migration transaction: foreign keys off outside the transaction (table replacement must not
    /// run foreign-key actions), `BEGIN IMMEDIATE`, capture suppressed, a foreign-key check before commit, and
    /// the previous foreign-key setting restored afterwards.
    static func schemaMigration<Result>(
        on connection: Connection, _ body: (Connection) throws -> Result
    ) throws -> Result {
        let foreignKeys = try connection.foreignKeysEnabled()
        try connection.setForeignKeys(false)
        defer { _ = try? connection.setForeignKeys(foreignKeys) }
        return try serverApply(on: connection) { connection in
            let result = try body(connection)
            if let table = try connection.scalar("PRAGMA foreign_key_check")?.textValue {
                throw ClientStoreError.migrationForeignKeyViolation(migration: "schema_migration", table: table)
            }
            return result
        }
    }
}
