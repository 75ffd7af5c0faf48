import SQLiteKit
import SynchroStore
import SynchroProtocol

/// The application write connection (`spec/client-store.md` §1, §7, §13): its own SQLite connection on the
/// store's file, with the application SQL policy installed as authorizer. Every statement is classified before
/// SQLite runs it; every write runs in a managed transaction that commits the row change, its ledger rows and
/// its value rows together.
///
/// Confined to the store's application lock; never shared between threads.
final class ApplicationConnection {
    let connection: Connection
    let policy = ApplicationSQLPolicy()
    private let uuids: UUIDSource
    private let clock: ClientClock
    private let clientID: String
    /// Synced tables by lower-cased name.
    private var syncedTables: [String: LocalSchemaTable] = [:]

    init(path: String, clientID: String, uuids: UUIDSource, clock: ClientClock) throws(SQLiteError) {
        connection = try ConnectionConventions.openApplication(path: path)
        self.clientID = clientID
        self.uuids = uuids
        self.clock = clock
        let policy = self.policy
        try connection.setAuthorizer { policy.authorize($0) }
    }

    func close() {
        connection.close()
    }

    /// Makes the policy and the insert context follow `tables` (after opening and after schema application).
    func updateSyncedTables(_ tables: [LocalSchemaTable]) {
        syncedTables = Dictionary(tables.map { (SQLName.normalized($0.tableName), $0) }) { first, _ in first }
        policy.update(syncedTables: tables.map(\.tableName))
    }

    func syncedTable(named name: String) -> LocalSchemaTable? {
        syncedTables[SQLName.normalized(name)]
    }

    // MARK: - Statements

    /// Runs one read-only statement and returns its rows.
    func query(_ sql: String, _ arguments: [SQLiteValue]) throws(ApplicationSQLError) -> [Row] {
        _ = try ApplicationStatement.classify(sql)
        let statement = try prepare(sql)
        guard statement.isReadOnly else { throw .writeInQuery }
        do {
            return try policy.enforcing { () throws(SQLiteError) -> [Row] in try Row.collect(statement, arguments) }
        } catch {
            throw mapped(error)
        }
    }

    /// Runs one write inside the current managed transaction and returns the rows it changed directly.
    func execute(_ sql: String, _ arguments: [SQLiteValue]) throws(ApplicationSQLError) -> Int {
        let classified = try ApplicationStatement.classify(sql)
        var context: CaptureContext?
        switch classified.kind {
        case .read:
            throw .readInExecute
        case .write(let operation):
            if let target = classified.targetTable, let table = syncedTable(named: target) {
                if classified.hasUpsert { throw .upsertOnSyncedTable(table: table.tableName) }
                if operation == .insert {
                    context = CaptureContext.inferredInsert(into: table, columns: classified.insertColumns)
                }
            }
        case .other:
            break
        }
        let statement = try prepare(sql)
        guard let context else {
            return try run(statement, arguments)
        }
        let token = uuids.next()
        do {
            try context.install(token: token, on: connection)
        } catch {
            throw .sqlite(error)
        }
        let outcome = Result { () throws(ApplicationSQLError) -> Int in try run(statement, arguments) }
        // The context must go right after its statement, whatever the statement did.
        do {
            try CaptureContext.clear(token: token, on: connection)
        } catch {
            throw .sqlite(error)
        }
        return try outcome.get()
    }

    /// Compiles `sql` under the policy; a denial becomes the typed error of the broken rule.
    private func prepare(_ sql: String) throws(ApplicationSQLError) -> Statement {
        do {
            return try policy.enforcing { () throws(SQLiteError) -> Statement in try connection.prepare(sql) }
        } catch {
            switch error.reason {
            case .multipleStatements: throw .multipleStatements
            case .emptyStatement: throw .emptyStatement
            default: throw mapped(error)
            }
        }
    }

    private func run(_ statement: Statement, _ arguments: [SQLiteValue]) throws(ApplicationSQLError) -> Int {
        do {
            try policy.enforcing { () throws(SQLiteError) in try statement.run(arguments) }
            // Read before anything else runs: capture context cleanup changes rows too.
            return connection.changes
        } catch {
            throw mapped(error)
        }
    }

    private func mapped(_ error: SQLiteError) -> ApplicationSQLError {
        if error.primaryCode == .authorization, let denial = policy.denial {
            return denial
        }
        return ApplicationSQLError.fromStatementFailure(error)
    }

    // MARK: - Managed writes

    /// One managed write transaction (`spec/client-store.md` §7): `BEGIN IMMEDIATE`; an authored mask for the
    /// whole callback when given; the callback; mask removal; the check that no capture context remains; for an
    /// atomic group the `atomic_group_id` key at start and its validation and removal before commit. Any failure
    /// rolls everything back, also when the callback swallowed an earlier error.
    func managedWrite<Value>(
        mask: CaptureContext?, atomic: Bool, _ body: (ApplicationTransaction) throws -> Value
    ) throws -> Value {
        try connection.transaction(kind: .immediate) {
            var groupID: String?
            if atomic {
                let id = uuids.next()
                try sqlite { () throws(SQLiteError) in try MetaStore.set(.atomicGroupID, id, on: connection) }
                groupID = id
            }
            let maskToken = mask.map { _ in uuids.next() }
            if let mask, let maskToken {
                try sqlite { () throws(SQLiteError) in try mask.install(token: maskToken, on: connection) }
            }
            let transaction = ApplicationTransaction(connection: self)
            let outcome = Result { try body(transaction) }
            transaction.end()
            if let maskToken {
                try sqlite { () throws(SQLiteError) in try CaptureContext.clear(token: maskToken, on: connection) }
            }
            let result = try outcome.get()
            if try sqlite({ () throws(SQLiteError) -> Bool in try CaptureContext.remains(on: connection) }) {
                throw ApplicationSQLError.captureContextRemains
            }
            if let groupID {
                try AtomicGroupValidator(connection: connection, clientID: clientID, uuids: uuids, clock: clock)
                    .validate(groupID: groupID)
                try sqlite { () throws(SQLiteError) in try MetaStore.remove(.atomicGroupID, on: connection) }
            }
            SyncCrashPoint.captureBeforeCommit.reached()
            return result
        }
    }

    private func sqlite<Value>(_ body: () throws(SQLiteError) -> Value) throws(ApplicationSQLError) -> Value {
        do {
            return try body()
        } catch {
            throw .sqlite(error)
        }
    }
}
