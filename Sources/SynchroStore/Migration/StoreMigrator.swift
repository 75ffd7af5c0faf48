import SQLiteKit

/// Runs the migration sequence the way GRDB's migrator does for the upstream client: the bookkeeping table
/// `grdb_migrations`, then each missing step in order, each in one `BEGIN IMMEDIATE` transaction that also
/// records its identifier, with foreign keys off during the step and `PRAGMA foreign_key_check` before commit.
package struct StoreMigrator {
    package let connection: Connection
    package let clock: ClientClock

    /// A migrator for the database open on `connection`; `clock` stamps the rows the ledger steps write.
    package init(connection: Connection, clock: ClientClock) {
        self.connection = connection
        self.clock = clock
    }

    /// Migrates the file forward and returns the layout it had before.
    package func migrate() throws(ClientStoreError) -> StoreLayout {
        let layout = try StoreLayout.read(connection)
        do {
            try connection.execute("CREATE TABLE IF NOT EXISTS grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY)")
        } catch {
            throw .sqlite(error)
        }
        for migration in layout.pendingMigrations {
            try run(migration)
        }
        try StoreLayoutVerifier.verify(connection)
        return layout
    }

    private func run(_ migration: StoreMigration) throws(ClientStoreError) {
        let foreignKeys: Bool
        do {
            foreignKeys = try connection.foreignKeysEnabled()
            try connection.setForeignKeys(false)
        } catch {
            throw .sqlite(error)
        }
        defer { _ = try? connection.setForeignKeys(foreignKeys) }
        do {
            try connection.transaction(kind: .immediate) {
                try step(migration)
                if let table = try connection.scalar("PRAGMA foreign_key_check")?.textValue {
                    throw ClientStoreError.migrationForeignKeyViolation(migration: migration.rawValue, table: table)
                }
                try connection.run("INSERT INTO grdb_migrations (identifier) VALUES (?)", [.text(migration.rawValue)])
            }
        } catch let error as ClientStoreError {
            throw error
        } catch let error as SQLiteError {
            throw .migrationFailed(migration: migration.rawValue, error)
        } catch {
            throw .migrationFailed(
                migration: migration.rawValue, SQLiteError(reason: .sqlite, code: .error, message: "\(error)"))
        }
    }

    private func step(_ migration: StoreMigration) throws {
        switch migration {
        case .v1: try LegacySteps.v1(connection)
        case .v2Buckets: try LegacySteps.v2(connection)
        case .v3Scopes: try LegacySteps.v3(connection)
        case .v4ScopeIntegrity: try LegacySteps.v4(connection)
        case .v5RejectedMutations: try LegacySteps.v5(connection)
        case .v6Protocol3: try LegacySteps.v6(connection)
        case .v7PendingLocalRevision: try LegacySteps.v7(connection)
        case .v8SealedPushBatches: try LegacySteps.v8(connection)
        case .v9MutationLedger: try LedgerSteps.v9(connection, clock: clock)
        case .v10RebuildPageReceipts: try LedgerSteps.v10(connection)
        case .v11DurableBackoff: try LedgerSteps.v11(connection)
        case .v12Gate2Recovery: try LedgerSteps.v12(connection)
        case .v13ScopeTextAffinity: try LedgerSteps.v13(connection)
        case .v14CaptureContext: try LedgerSteps.v14(connection)
        case .v15PendingProtocolIdentityIndex: try LedgerSteps.v15(connection)
        case .v16CaptureStorageValidation, .v17PushLimitCaptureDependency, .v18KeyOnlyInsertCapture:
            try CaptureTriggerInstaller.regenerate(on: connection)
        case .v18AtomicGroups: try LedgerSteps.v18AtomicGroups(connection)
        }
    }
}

/// Column names of `table` in declaration order.
package func columnNames(of table: String, on connection: Connection) throws(SQLiteError) -> [String] {
    try connection.columns(of: table).map(\.name)
}
