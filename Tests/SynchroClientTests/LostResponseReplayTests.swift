import Foundation
import Synchronization
import SynchroClient
import SynchroHTTP
import SynchroProtocol
import SynchroServer
import Testing
import _SeedkitTestSupport
import SynchroStore

/// The reference server behind a handler that counts the requests it answered per path, on a loopback port.
final class CountingServer: Sendable {
    let engine: SyncEngine
    let baseURL: String
    private let server: HTTPServer
    private let counts = RequestCounts()
    private let directory: TemporaryDirectory

    init(rows: Int = 60) throws {
        directory = try TemporaryDirectory(prefix: "counting-server")
        let dataset = try Dataset(directory: RepositoryLayout.root.appendingPathComponent("seeds/demo"))
        engine = try SyncEngine(configuration: ServerConfiguration(
            dataset: dataset, rowsOverride: rows, databasePath: directory.path("server.db"),
            credentials: RunningServer.credentials, operatorToken: RunningServer.operatorToken,
            clock: ManualServerClock()))
        let (engine, counts) = (self.engine, self.counts)
        server = HTTPServer(handler: HTTPClosureHandler { request in
            let response = engine.handle(request)
            counts.add(request.path)
            return response
        })
        baseURL = "http://127.0.0.1:\(try server.start(host: "127.0.0.1", port: 0))"
    }

    deinit {
        server.stop()
    }

    /// How many requests to `path` the server handled (answered, lost or not).
    func handled(_ path: String) -> Int {
        counts.count(path)
    }
}

/// Requests handled per path.
final class RequestCounts: Sendable {
    private let counts = Mutex<[String: Int]>([:])

    var all: [String: Int] { counts.withLock { $0 } }

    func add(_ path: String) {
        counts.withLock { $0[path, default: 0] += 1 }
    }

    func count(_ path: String) -> Int {
        counts.withLock { $0[path, default: 0] }
    }
}

/// The engine's transport over real libcurl with one keep-alive connection, as a host would build it; it counts
/// the failures its caller saw and records every body it posted.
final class CurlSyncTransport: SyncTransport, Sendable {
    private let transport: CurlTransport
    private let state = Mutex<(errors: [TransportError], sent: [(path: String, body: [UInt8])])>(([], []))

    init(baseURL: String) throws {
        transport = try CurlTransport(configuration: .init(baseURL: baseURL))
    }

    /// The transport failures the engine was told about, in order.
    var errors: [TransportError] { state.withLock { $0.errors } }

    /// Every body posted to `path`, in order.
    func bodies(_ path: String) -> [[UInt8]] { state.withLock { $0.sent.filter { $0.path == path }.map(\.body) } }

    func post(path: String, body: [UInt8]) throws -> SyncReply {
        state.withLock { $0.sent.append((path, body)) }
        var headers = HTTPHeaders()
        headers.append(name: "Authorization", value: "Bearer secret-alice")
        headers.append(name: "Content-Type", value: "application/json")
        do {
            let response = try transport.send(TransportRequest(method: .post, path: path, headers: headers, body: body))
            return SyncReply(
                status: response.status, headers: response.headers.map { (name: $0.name, value: $0.value) },
                body: response.body)
        } catch {
            state.withLock { $0.errors.append(error) }
            throw error
        }
    }
}

/// The server's `lose_response` fault over real loopback HTTP and libcurl: the push is committed on the server,
/// its response dies after the header fields, the engine sees the failure (not a silent libcurl resend) and
/// replays the sealed batch byte for byte, which the server answers from its ledger.
@Suite("Lost push response over libcurl")
struct LostResponseReplayTests {
    @Test("a lost push response is seen by the client and replayed exactly: same batch, same mutation IDs, once")
    func lostPushResponseIsSeenAndReplayedExactly() throws {
        let server = try CountingServer()
        let transport = try CurlSyncTransport(baseURL: server.baseURL)
        let fixture = try StoreFixture(applyDemo: false)
        let context = SyncContext(store: fixture.store, transport: transport, pageLimit: 40)
        let recorder = CycleRecorder()
        _ = try recorder.cycle(context).run()

        let insert = "INSERT INTO notes (id, owner_id, title, pinned, updated_at) VALUES (?, 'alice', ?, 0, ?)"
        for index in 1...3 {
            try fixture.store.execute(
                insert, [.text("lost-\(index)"), .text("note \(index)"), .text("2026-01-02T03:04:05.000Z")])
        }
        let authored = try fixture.store.ledger().map(\.mutationID)
        // The connection the fault hits is the keep-alive one the first cycle used.
        try server.engine.inject(.loseResponse(route: "/sync/push", count: 1))

        let summary = try recorder.cycle(context).run()

        // Seen: one transfer failure reached the engine, which scheduled one push retry without a status.
        #expect(transport.errors.count == 1)
        #expect(recorder.events.contains {
            if case .retryScheduled(.push, 1, nil, _, _) = $0 { return true }
            return false
        })
        // Exact: two pushes sent and handled (the lost one and its replay, no hidden resend), byte-identical,
        // naming exactly the authored mutation IDs.
        let pushes = transport.bodies("/sync/push")
        #expect(pushes.count == 2 && pushes[0] == pushes[1])
        #expect(server.handled("/sync/push") == 2)
        let request = try #require(try StrictJSONParser().parse(pushes[0]).objectValue)
        let sentIDs = (request["mutations"]?.arrayValue ?? []).compactMap {
            $0.objectValue?["mutation_id"]?.stringValue
        }
        #expect(sentIDs == authored)
        // Once: the replay was answered from the server's ledger, so every mutation was accepted, none conflicted
        // as a duplicate insert would.
        #expect(summary.mutationsAccepted == 3 && summary.mutationsRejected == 0)
        #expect(try fixture.store.ledger().map(\.state) == [.accepted, .accepted, .accepted])
        #expect(try fixture.store.backoff() == nil)

        // The server holds each note exactly once: a fresh device of the same user reads the same three rows.
        let reader = try StoreFixture(clientID: "reader-device", applyDemo: false)
        let readerTransport = try CurlSyncTransport(baseURL: server.baseURL)
        _ = try CycleRecorder().cycle(SyncContext(store: reader.store, transport: readerTransport, pageLimit: 40)).run()
        let rows = try reader.inspect { connection in
            try connection.query("SELECT id, title FROM notes WHERE id LIKE 'lost-%' ORDER BY id") {
                "\(try $0.text(at: 0)) \(try $0.text(at: 1))"
            }
        }
        #expect(rows == ["lost-1 note 1", "lost-2 note 2", "lost-3 note 3"])
        #expect(readerTransport.errors.isEmpty)
    }
}
