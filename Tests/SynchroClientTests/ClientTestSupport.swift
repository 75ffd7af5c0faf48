import Foundation
import SQLiteKit
import Synchronization
import SynchroClient
import SynchroProtocol
import _SeedkitTestSupport
import SynchroStore

/// A store on a fresh file in its own temporary directory, kept alive as long as the fixture.
final class StoreFixture {
    let directory: TemporaryDirectory
    let path: String
    let uuids: SequentialUUIDs
    private(set) var store: ClientStore

    let clock: ClientClock

    init(
        clientID: String = "ios-device-9", applyDemo: Bool = true,
        clock: ClientClock = ClientClock(unixMilliseconds: { 1_700_000_000_123 })
    ) throws {
        directory = try TemporaryDirectory(prefix: "synchro-client")
        path = directory.path("app.db")
        uuids = SequentialUUIDs()
        self.clock = clock
        store = try ClientStore(
            configuration: Self.configuration(path: path, clientID: clientID, uuids: uuids, clock: clock))
        if applyDemo {
            try store.applySchema(try demoManifest())
        }
    }

    static func configuration(
        path: String, clientID: String, uuids: SequentialUUIDs,
        clock: ClientClock = ClientClock(unixMilliseconds: { 1_700_000_000_123 })
    ) -> ClientStoreConfiguration {
        ClientStoreConfiguration(path: path, clientID: clientID, uuids: UUIDSource { uuids.next() }, clock: clock)
    }

    /// Closes the store and opens the same file again, as a restarted process would.
    func reopen() throws {
        store.close()
        store = try ClientStore(
            configuration: Self.configuration(path: path, clientID: "ios-device-9", uuids: uuids, clock: clock))
    }

    /// A plain connection on the same file, for inspecting what the store wrote.
    func inspect<Result>(_ body: (Connection) throws -> Result) throws -> Result {
        let connection = try Connection(path: path, mode: .readWrite)
        defer { connection.close() }
        try connection.setBusyTimeout(milliseconds: 5_000)
        return try body(connection)
    }

    /// Every ledger row's (operation, record, state, source) in local order.
    func ledgerSummary() throws -> [String] {
        try store.ledger().map { "\($0.operation.rawValue) \($0.tableName)/\($0.recordID) \($0.state.rawValue)" }
    }

    deinit {
        store.close()
    }
}

/// A wall clock that moves only when a test advances it (for example from a cycle's injected delay).
final class ManualClientClock: Sendable {
    private let now: Mutex<Int64>

    init(_ start: Int64 = 1_700_000_000_000) {
        now = Mutex(start)
    }

    var milliseconds: Int64 { now.withLock { $0 } }

    var clock: ClientClock { ClientClock { self.now.withLock { $0 } } }

    func advance(by duration: Duration) {
        let (seconds, attoseconds) = duration.components
        let milliseconds = seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        now.withLock { $0 += milliseconds }
    }
}

/// Deterministic canonical UUIDs: 00000000-0000-4000-8000-000000000001, …
final class SequentialUUIDs: Sendable {
    private let counter = Mutex(0)

    func next() -> String {
        let value = counter.withLock { value -> Int in
            value += 1
            return value
        }
        let suffix = String(value, radix: 16)
        return "00000000-0000-4000-8000-" + String(repeating: "0", count: 12 - suffix.count) + suffix
    }
}

/// `INSERT INTO tasks …` with every NOT NULL column, for tests that need a synced row.
func taskInsertSQL(_ id: String, title: String = "T", position: Int = 1) -> String {
    "INSERT INTO tasks (id, owner_id, title, done, position) VALUES ('\(id)', 'u', '\(title)', 0, \(position))"
}

/// The task field IDs an insert naming every writable column authors, in field ID order.
let allTaskInsertFields = ["fld_task_done", "fld_task_owner", "fld_task_position", "fld_task_title"]

/// The demo manifest at `seeds/demo/manifest.json`.
func demoManifest() throws -> ClientManifest {
    let url = RepositoryLayout.root.appendingPathComponent("seeds/demo/manifest.json")
    return try ClientManifest(bytes: Array(try Data(contentsOf: url)))
}

/// Everything observable about a database's contents: each table's rows and the schema text.
func databaseFingerprint(_ connection: Connection) throws -> [String] {
    let objects = try connection.query(
        "SELECT type, name, coalesce(sql, '') FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name"
    ) { "\(try $0.text(at: 0)) \(try $0.text(at: 1)) \(try $0.text(at: 2))" }
    let tables = try connection.query(
        "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
    ) { try $0.text(at: 0) }
    var rows: [String] = []
    for table in tables {
        let values = try connection.rows("SELECT * FROM \(SQLiteIdentifier.quote(table))")
        rows.append("\(table): \(values.map { $0.map { "\($0)" }.joined(separator: "|") }.sorted())")
    }
    return objects + rows
}
