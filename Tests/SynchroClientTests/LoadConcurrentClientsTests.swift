import Dispatch
import Foundation
import SQLiteKit
import Synchronization
import SynchroClient
import SynchroHTTP
import SynchroProtocol
import SynchroServer
import Testing
import _SeedkitTestSupport

/// Many headless clients at once against one in-process reference server (docs/reliability.md): each client has
/// its own store file, its own libcurl transport and its own thread, and runs sync cycles that push its writes to
/// its user's scope — shared with the other devices of the same user (alice, bob, carol) — while an operator
/// thread changes the shared catalog. Afterwards every client converges: one more cycle leaves it current, every
/// scope's stored checksum matches the server's (an unapplied pull) and is the same on every device of the scope,
/// every mutation a client authored was accepted exactly once, and every device (and a fresh reader per user)
/// holds exactly the rows all devices of its user wrote.
///
/// `SEEDKIT_LOAD_CLIENTS` (default 50), `SEEDKIT_LOAD_CYCLES` (default 3) and `SEEDKIT_LOAD_SECONDS` (when set,
/// clients keep cycling until that time has passed) make the longer runs of docs/reliability.md.
@Suite("Load: concurrent headless clients", .serialized)
struct LoadConcurrentClientsTests {
    static let users = ["alice", "bob", "carol"]

    @Test("concurrent clients write, sync and converge, with no accepted write missing or duplicated")
    func concurrentClientsConverge() throws {
        let environment = ProcessInfo.processInfo.environment
        let clientCount = environment["SEEDKIT_LOAD_CLIENTS"].flatMap { Int($0) } ?? 50
        let cycles = environment["SEEDKIT_LOAD_CYCLES"].flatMap { Int($0) } ?? 3
        let duration = environment["SEEDKIT_LOAD_SECONDS"].flatMap { Double($0) }.map { Duration.seconds($0) }
        let server = try RunningServer(rows: 200)
        let directory = try TemporaryDirectory(prefix: "seedkit-load")
        let clients = try (0..<clientCount).map { index in
            try LoadClient(index: index, user: Self.users[index % Self.users.count], server: server,
                           directory: directory)
        }
        let failures = LoadFailures()
        let catalog = LoadCatalogWriter(server: server)

        let clock = ContinuousClock()
        let started = clock.now
        Self.onThreads(clients, failures: failures, alongside: {
            catalog.run(writes: max(10, clientCount * cycles / 5))
        }) { client in
            try client.run(cycles: cycles, until: duration.map { started + $0 })
        }
        let loadSeconds = (clock.now - started).loadSeconds
        try #require(failures.all.isEmpty, "\(failures.all.prefix(5))")
        #expect(catalog.failures.isEmpty, "\(catalog.failures.prefix(3))")

        // Converge: a final cycle each, after every write of every client and of the operator.
        let converging = clock.now
        Self.onThreads(clients, failures: failures) { client in try client.converge() }
        try #require(failures.all.isEmpty, "\(failures.all.prefix(5))")
        try Self.expectConvergence(clients, catalog: catalog, server: server, directory: directory)
        let convergeSeconds = (clock.now - converging).loadSeconds

        let requests = clients.reduce(0) { $0 + $1.requests }
        let mutations = clients.reduce(0) { $0 + $1.authored.count }
        print("""
            load: \(clientCount) clients × \(clients.map(\.cycles).min() ?? 0)…\(clients.map(\.cycles).max() ?? 0) \
            cycles in \(String(format: "%.1f", loadSeconds)) s: \(requests) requests \
            (\(String(format: "%.0f", Double(requests) / max(loadSeconds, 0.001))) per second), \(mutations) \
            mutations accepted, \(clients.reduce(0) { $0 + $1.retries }) retries, \(catalog.writes) catalog writes; \
            converged and checked in \(String(format: "%.1f", convergeSeconds)) s: every scope matches the server
            """)
        for client in clients { client.close() }
    }

    /// Runs `body` for every client on a thread of its own (and `alongside` on one more), and waits for all.
    static func onThreads(
        _ clients: [LoadClient], failures: LoadFailures, alongside: (@Sendable () -> Void)? = nil,
        _ body: @escaping @Sendable (LoadClient) throws -> Void
    ) {
        let group = DispatchGroup()
        for client in clients {
            group.enter()
            Thread {
                defer { group.leave() }
                do {
                    try body(client)
                } catch {
                    failures.record("client \(client.index) (\(client.user)): \(error)")
                }
            }.start()
        }
        if let alongside {
            group.enter()
            Thread {
                defer { group.leave() }
                alongside()
            }.start()
        }
        group.wait()
    }

    /// Every store is current, valid, matches the server's checksums and holds exactly its user's writes.
    static func expectConvergence(
        _ clients: [LoadClient], catalog: LoadCatalogWriter, server: RunningServer, directory: TemporaryDirectory
    ) throws {
        var checksums: [String: Set<String>] = [:]
        var rowsByUser: [String: Set<String>] = [:]
        for client in clients {
            let validation = try client.validateAgainstServer()
            #expect(validation.findings.isEmpty, "client \(client.index): \(validation.findings)")
            for scope in validation.scopes {
                #expect(scope.server == .matches,
                        "client \(client.index) scope \(scope.scopeID): \(scope.server.map(\.rawValue) ?? "none")")
            }
            for (scope, checksum) in try client.storedChecksums() { checksums[scope, default: []].insert(checksum) }
            let ledger = try client.store.ledger()
            #expect(ledger.allSatisfy { $0.state == .accepted }, "client \(client.index): \(ledger.map(\.state))")
            #expect(ledger.count == client.authored.count,
                    "client \(client.index): \(ledger.count) ledger entries, \(client.authored.count) authored")
            rowsByUser[client.user, default: []].formUnion(client.expectedRows())
        }
        for (scope, values) in checksums {
            #expect(values.count == 1, "scope \(scope) has \(values.count) different checksums across devices")
        }
        let products = catalog.titles
        for client in clients {
            #expect(Set(try client.authoredRows()) == rowsByUser[client.user] ?? [], "client \(client.index)")
            #expect(try client.catalogTitles(products.keys.sorted()) == products, "client \(client.index)")
        }
        // The server's own rows, through a fresh device of each user.
        for (number, user) in users.enumerated() {
            let reader = try LoadClient(index: 1000 + number, user: user, server: server, directory: directory)
            defer { reader.close() }
            try reader.converge()
            #expect(Set(try reader.authoredRows()) == rowsByUser[user] ?? [], "reader of \(user)")
        }
    }
}

extension Duration {
    var loadSeconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}

/// One headless client: a store file, a libcurl transport as its user, a cycle, and the model of its writes.
final class LoadClient: @unchecked Sendable {
    let index: Int
    let user: String
    let store: ClientStore
    let path: String
    private let transport: LoadTransport
    private let cycle: SyncCycle
    // Mutated only by the client's own thread, read after it finished.
    private(set) var authored: [String] = []
    private(set) var notes: [String: String] = [:]
    private(set) var requests = 0
    private(set) var retries = 0
    private(set) var cycles = 0

    init(index: Int, user: String, server: RunningServer, directory: TemporaryDirectory) throws {
        self.index = index
        self.user = user
        path = directory.path("client-\(index).db")
        store = try ClientStore(configuration: ClientStoreConfiguration(path: path, clientID: "load-client-\(index)"))
        transport = try LoadTransport(baseURL: server.baseURL, user: user)
        let context = SyncContext(store: store, transport: transport, platform: "linux", pageLimit: 50)
        let configuration = SyncCycle.Configuration(retry: SyncRetryPolicy(maxAttempts: 20))
        // The server's only refusals under load are capture_pending while a write materializes: retry at once.
        cycle = SyncCycle(context: context, configuration: configuration, delay: { _ in })
    }

    /// `cycles` cycles (or cycles until `deadline`), each after one to three writes to the user's notes.
    func run(cycles count: Int, until deadline: ContinuousClock.Instant?) throws {
        var cycle = 0
        while deadline.map({ ContinuousClock.now < $0 }) ?? (cycle < count) {
            if cycle > 0 { try write(cycle) }
            try sync()
            cycle += 1
        }
        cycles = cycle
    }

    private func write(_ cycle: Int) throws {
        for step in 0..<(1 + (index + cycle) % 3) {
            let id = "load-\(index)-\(cycle)-\(step)"
            let title = "\(user) \(index)/\(cycle)/\(step)"
            try store.execute(
                "INSERT INTO notes (id, owner_id, title, pinned, updated_at) VALUES (?, ?, ?, 0, ?)",
                [.text(id), .text(user), .text(title), .text("2026-01-01T00:00:00.000Z")])
            notes[id] = title
            authored.append(id)
        }
        // An update of a note accepted in an earlier cycle.
        if let earlier = notes.keys.sorted().first(where: { !$0.hasPrefix("load-\(index)-\(cycle)-") }) {
            let title = "\(user) \(index) edited in \(cycle)"
            try store.execute("UPDATE notes SET title = ? WHERE id = ?", [.text(title), .text(earlier)])
            notes[earlier] = title
            authored.append(earlier)
        }
    }

    private func sync() throws {
        let summary = try cycle.run()
        requests += summary.totalRequests
        retries += summary.retries
    }

    /// Cycles until current (nothing to push, every scope verified at the head).
    func converge() throws {
        for summary in try cycle.runUntilCurrent() {
            requests += summary.totalRequests
        }
    }

    func validateAgainstServer() throws -> StoreValidation {
        try StoreValidator(path: path).validate(against: transport)
    }

    /// `scope → checksum` as stored.
    func storedChecksums() throws -> [(String, String)] {
        let connection = try Connection(path: path, mode: .readOnly)
        defer { connection.close() }
        try connection.setBusyTimeout(milliseconds: 5_000)
        return try connection.query("SELECT scope_id, checksum FROM _synchro_scopes ORDER BY scope_id") {
            (try $0.text(at: 0), $0.isNull(at: 1) ? "" : try $0.text(at: 1))
        }
    }

    /// `id|title` of every load note this device holds.
    func authoredRows() throws -> [String] {
        try store.query("SELECT id, title FROM notes WHERE id LIKE 'load-%' AND deleted_at IS NULL").map {
            "\($0.values[0].textValue ?? "?")|\($0.values[1].textValue ?? "?")"
        }
    }

    func expectedRows() -> Set<String> {
        Set(notes.map { "\($0.key)|\($0.value)" })
    }

    func catalogTitles(_ ids: [Int64]) throws -> [Int64: String] {
        var titles: [Int64: String] = [:]
        for id in ids {
            let rows = try store.query("SELECT title FROM products WHERE id = ?", [.integer(id)])
            titles[id] = rows.first?.values.first?.textValue
        }
        return titles
    }

    func close() {
        store.close()
    }
}

/// What the client threads report.
final class LoadFailures: Sendable {
    private let list = Mutex<[String]>([])

    var all: [String] { list.withLock { $0 } }

    func record(_ failure: String) {
        list.withLock { $0.append(failure) }
    }
}

/// The engine's transport over libcurl, one connection per client, as its user.
final class LoadTransport: SyncTransport, Sendable {
    private let curl: CurlTransport
    private let credential: String

    init(baseURL: String, user: String) throws {
        curl = try CurlTransport(configuration: .init(baseURL: baseURL))
        credential = "secret-\(user)"
    }

    func post(path: String, body: [UInt8]) throws -> SyncReply {
        let response = try curl.send(
            .protocolPost(path: path, body: body, credential: credential, appVersion: "1.0.0"))
        return SyncReply(
            status: response.status, headers: response.headers.map { (name: $0.name, value: $0.value) },
            body: response.body)
    }
}

/// The operator changing the shared catalog while the clients run: titles of the first products rewritten.
final class LoadCatalogWriter: Sendable {
    let server: RunningServer
    private let state = Mutex<(titles: [Int64: String], failures: [String], writes: Int)>(([:], [], 0))

    init(server: RunningServer) {
        self.server = server
    }

    var titles: [Int64: String] { state.withLock { $0.titles } }
    var failures: [String] { state.withLock { $0.failures } }
    var writes: Int { state.withLock { $0.writes } }

    func run(writes: Int) {
        for step in 0..<writes {
            let id = Int64(1_000_001 + step % 20)
            let title = "catalog edit \(step)"
            let row = JSONValue.object(JSONObject([
                "fld_product_id": .string(String(id)), "fld_product_sku": .string("SKU-LOAD\(id)"),
                "fld_product_title": .string(title), "fld_product_price": .string("9.99"),
                "fld_product_stock": .number(JSONNumber(5)), "fld_product_rating": .null,
                "fld_product_active": .bool(true), "fld_product_release": .null, "fld_product_attrs": .null,
                "fld_product_thumb": .null, "fld_product_category": .number(JSONNumber(1)),
                "fld_product_updated_at": .string("2026-01-03T00:00:00.000000Z"),
            ]))
            do {
                try server.engine.operatorWrite(table: "tbl_products", pk: .string(String(id)), row: row)
                state.withLock {
                    $0.titles[id] = title
                    $0.writes += 1
                }
            } catch {
                state.withLock { $0.failures.append("\(error)") }
            }
        }
    }
}
