import Foundation
import SQLiteKit
import Synchronization
import SynchroClient
import SynchroProtocol
import _SeedkitTestSupport
import SynchroStore

/// A ``SyncTransport`` over a loopback ``RunningServer``; `edit` may rewrite a reply (to tamper with bytes)
/// before the engine sees it.
final class ServerTransport: SyncTransport, Sendable {
    let server: RunningServer
    let user: String
    private let edit: Mutex<(@Sendable (String, SyncReply) -> SyncReply)?>
    private let last: Mutex<(request: [UInt8], reply: SyncReply)?>

    init(server: RunningServer, user: String = "alice") {
        self.server = server
        self.user = user
        edit = Mutex(nil)
        last = Mutex(nil)
    }

    /// The last request body sent and the reply the engine received for it.
    var lastExchange: (request: [UInt8], reply: SyncReply)? { last.withLock { $0 } }

    /// Installs (or removes) the reply editor.
    func setEdit(_ body: (@Sendable (String, SyncReply) -> SyncReply)?) {
        edit.withLock { $0 = body }
    }

    func post(path: String, body: [UInt8]) throws -> SyncReply {
        let reply = try server.post(path, bytes: body, as: user)
        let result = SyncReply(status: reply.status, body: reply.body)
        let edited = edit.withLock { $0 }.map { $0(path, result) } ?? result
        last.withLock { $0 = (body, edited) }
        return edited
    }
}

/// A reference server, a fresh store on a real SQLite file and a sync context joining them.
final class SyncFixture {
    let server: RunningServer
    let transport: ServerTransport
    let storeFixture: StoreFixture
    let pageLimit: Int64

    init(
        rows: Int = 300, pageLimit: Int64 = 40,
        clock: ClientClock = ClientClock(unixMilliseconds: { 1_700_000_000_123 })
    ) throws {
        server = try RunningServer(rows: rows)
        transport = ServerTransport(server: server)
        storeFixture = try StoreFixture(applyDemo: false, clock: clock)
        self.pageLimit = pageLimit
    }

    var store: ClientStore { storeFixture.store }

    var context: SyncContext { SyncContext(store: store, transport: transport, pageLimit: pageLimit) }

    /// The store and page limit over another transport (a cycle's metered or fault-injecting one).
    func context(over transport: any SyncTransport) -> SyncContext {
        SyncContext(store: store, transport: transport, pageLimit: pageLimit)
    }

    /// Connects the fresh store.
    func connect() throws {
        try ConnectExchange(context: context).run()
    }

    /// Connects and rebuilds every assigned scope.
    func connectAndRebuild() throws {
        try connect()
        for scope in try scopes().map(\.id) {
            try RebuildApplier(context: context).rebuild(scope: scope)
        }
    }

    /// `(scope_id, cursor, checksum)` of every local scope, byte order.
    func scopes() throws -> [(id: String, cursor: String?, checksum: String?)] {
        try storeFixture.inspect { connection in
            try connection.query("SELECT scope_id, cursor, checksum FROM _synchro_scopes ORDER BY scope_id") {
                (try $0.text(at: 0), $0.isNull(at: 1) ? nil : try $0.text(at: 1),
                 $0.isNull(at: 2) ? nil : try $0.text(at: 2))
            }
        }
    }

    /// The integer result of one SQL query on the file.
    func count(_ sql: String) throws -> Int64 {
        try storeFixture.inspect { try $0.scalar(sql)?.integerValue ?? -1 }
    }
}
