import SQLiteKit

/// What a database file records about its Synchro layout before it is migrated.
public struct StoreLayout: Sendable, Equatable {
    /// How the file relates to the migration sequence.
    public enum Kind: Sendable, Equatable {
        /// No Synchro tables and no `grdb_migrations`: a new database.
        case empty
        /// Exactly v1 … v8 recorded: the seed interchange baseline (`spec/seed-format.md` §1.1).
        case interchangeBaseline
        /// Every step recorded: the current layout.
        case current
        /// Another prefix of the sequence; opening runs the remaining steps.
        case partial
    }

    /// The classification.
    public let kind: Kind
    /// The recorded steps, in sequence order.
    public let appliedMigrations: [StoreMigration]
    /// `PRAGMA user_version` (6 for an interchange seed; the Swift layout itself leaves it alone).
    public let userVersion: Int32

    /// The steps opening the file would run, in order.
    public var pendingMigrations: [StoreMigration] {
        Array(StoreMigration.allCases.dropFirst(appliedMigrations.count))
    }

    /// Reads the layout of the database open on `connection`; throws for an unknown or newer layout.
    package static func read(_ connection: Connection) throws(ClientStoreError) -> StoreLayout {
        do {
            let userVersion = try connection.userVersion()
            guard try connection.tableExists("grdb_migrations") else {
                let synchroTables = try connection.scalar(
                    "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name LIKE '\\_synchro\\_%' ESCAPE '\\'"
                )?.integerValue ?? 0
                if synchroTables > 0 {
                    throw ClientStoreError.unknownLayout(.synchroTablesWithoutMigrationTable(userVersion: userVersion))
                }
                return StoreLayout(kind: .empty, appliedMigrations: [], userVersion: userVersion)
            }
            let recorded = try connection.query("SELECT identifier FROM grdb_migrations") { try $0.text(at: 0) }
            return try classify(recorded: recorded, userVersion: userVersion)
        } catch let error as ClientStoreError {
            throw error
        } catch let error as SQLiteError {
            throw .sqlite(error)
        } catch {
            throw .sqlite(SQLiteError(reason: .sqlite, code: .error, message: "\(error)"))
        }
    }

    package static func classify(recorded: [String], userVersion: Int32) throws(ClientStoreError) -> StoreLayout {
        let unknown = recorded.filter { StoreMigration(rawValue: $0) == nil }.sorted()
        guard unknown.isEmpty else { throw .newerLayout(unknownMigrations: unknown) }
        let applied = StoreMigration.allCases.filter { recorded.contains($0.rawValue) }
        guard applied == Array(StoreMigration.allCases.prefix(applied.count)) else {
            throw .unknownLayout(.migrationsNotAPrefix(applied: applied.map(\.rawValue)))
        }
        let kind: Kind = switch applied.count {
        case 0: .empty
        case StoreMigration.interchangeBaseline.count: .interchangeBaseline
        case StoreMigration.allCases.count: .current
        default: .partial
        }
        return StoreLayout(kind: kind, appliedMigrations: applied, userVersion: userVersion)
    }
}
