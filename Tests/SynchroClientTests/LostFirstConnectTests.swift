import Foundation
import Synchronization
import SynchroClient
import SynchroProtocol
import SynchroStore
import Testing
import _SeedkitTestSupport

/// Forwards every request to the reference server and loses the answer to the first connect after the server
/// committed it, as a dropped connection does; records every body it forwarded.
final class FirstConnectLosingTransport: SyncTransport, Sendable {
    struct Lost: Error {}
    let inner: ServerTransport
    private let state: Mutex<(lost: Bool, bodies: [(path: String, body: [UInt8])])>

    /// With `losing` false nothing is lost: the transport only records.
    init(_ inner: ServerTransport, losing: Bool = true) {
        self.inner = inner
        state = Mutex((!losing, []))
    }

    /// Every body forwarded to `path`, in order.
    func bodies(_ path: String) -> [[UInt8]] {
        state.withLock { $0.bodies.filter { $0.path == path }.map(\.body) }
    }

    func post(path: String, body: [UInt8]) throws -> SyncReply {
        let reply = try inner.post(path: path, body: body)
        let lose = state.withLock { state -> Bool in
            state.bodies.append((path, body))
            guard path == "/sync/connect", !state.lost else { return false }
            state.lost = true
            return true
        }
        if lose { throw Lost() }
        return reply
    }
}

/// The reference server refuses a resent first connect as upstream does (a known identity, 400
/// `invalid_schema_reference`); the engine recovers by leaving the identity it never held (`docs/decisions.md`,
/// "A lost first-connect response: the store leaves the identity it never held").
@Suite("Lost first-connect response")
struct LostFirstConnectTests {
    static let insert = "INSERT INTO notes (id, owner_id, title, pinned, updated_at) VALUES (?, 'alice', ?, 0, ?)"

    static func clientID(of body: [UInt8]) throws -> String? {
        try StrictJSONParser().parse(body).objectValue?["client_id"]?.stringValue
    }

    @Test("a lost first-connect answer: one cycle leaves the refused ID, connects fresh, pushes every mutation once")
    func recoversWithoutLosingIntent() throws {
        let server = try RunningServer(rows: 20)
        // A store with a verified manifest but no connect: authored intent exists before the first connect.
        let fixture = try StoreFixture(clientID: "ios-device-9", applyDemo: true)
        for index in 1...3 {
            try fixture.store.execute(
                Self.insert, [.text("first-\(index)"), .text("note \(index)"), .text("2026-01-02T03:04:05.000Z")])
        }
        let authored = try fixture.store.ledger().map(\.mutationID)
        #expect(authored.count == 3)
        let transport = FirstConnectLosingTransport(ServerTransport(server: server))
        let recorder = CycleRecorder()
        let context = SyncContext(store: fixture.store, transport: transport, pageLimit: 40)

        let summary = try recorder.cycle(context).run()

        // Lost, refused (same bytes, the identity the server registered), then a first connect under a new ID.
        let connects = transport.bodies("/sync/connect")
        #expect(connects.count == 3)
        #expect(connects.count >= 2 && connects[0] == connects[1])
        #expect(try connects.first.flatMap(Self.clientID) == "ios-device-9")
        let current = try #require(try fixture.store.meta(.clientServerID))
        #expect(current != "ios-device-9")
        #expect(try connects.last.flatMap(Self.clientID) == current)
        #expect(summary.replacedClientIDs == ["ios-device-9"])
        #expect(recorder.events.contains(.clientIdentityReplaced(left: "ios-device-9", current: current)))
        let inspection = try fixture.store.inspect()
        #expect(inspection.replacedClientIDs == ["ios-device-9"])
        #expect(inspection.clientID == current)
        #expect(inspection.blockingError == nil)
        #expect(try fixture.store.backoff() == nil)

        // Exactly once: one push under the new ID naming every authored mutation ID, each accepted.
        let pushes = transport.bodies("/sync/push")
        #expect(pushes.count == 1)
        let push = try #require(try pushes.first.map { try StrictJSONParser().parse($0) }?.objectValue)
        #expect(push["client_id"]?.stringValue == current)
        #expect((push["mutations"]?.arrayValue ?? []).compactMap { $0.objectValue?["mutation_id"]?.stringValue }
            == authored)
        #expect(summary.mutationsAccepted == 3 && summary.mutationsRejected == 0)
        #expect(try fixture.store.ledger().map(\.state) == [.accepted, .accepted, .accepted])

        // Converged: the next cycle sends nothing under the left ID, and a fresh device reads each note once.
        _ = try recorder.cycle(context).run()
        #expect(try transport.bodies("/sync/connect").dropFirst(2).allSatisfy { try Self.clientID(of: $0) == current })
        let reader = try StoreFixture(clientID: "reader-device", applyDemo: false)
        _ = try CycleRecorder().cycle(
            SyncContext(store: reader.store, transport: ServerTransport(server: server), pageLimit: 40)).run()
        let rows = try reader.inspect { connection in
            try connection.query("SELECT id, title FROM notes WHERE id LIKE 'first-%' ORDER BY id") {
                "\(try $0.text(at: 0)) \(try $0.text(at: 1))"
            }
        }
        #expect(rows == ["first-1 note 1", "first-2 note 2", "first-3 note 3"])
    }

    @Test("a fresh store whose first answer was lost recovers on the next run and converges")
    func freshStoreRecoversOnNextRun() throws {
        let fixture = try SyncFixture(rows: 20, pageLimit: 40)
        let losing = FirstConnectLosingTransport(fixture.transport)
        // One attempt per cycle: the lost answer ends the first run in backoff, as a killed process would.
        let once = SyncCycle.Configuration(retry: SyncRetryPolicy(maxAttempts: 1))
        let first = SyncCycle(context: fixture.context(over: losing), configuration: once, delay: { _ in })
        #expect(throws: SyncCycleError.self) { try first.run() }
        #expect(try fixture.store.meta(.clientServerID) == fixture.store.configuration.clientID)

        let second = CycleRecorder().cycle(fixture.context(over: losing))
        let summary = try second.run()
        #expect(summary.replacedClientIDs == [fixture.store.configuration.clientID])
        #expect(try fixture.store.meta(.clientServerID) != fixture.store.configuration.clientID)
        #expect(try fixture.store.inspect().blockingError == nil)
        #expect(try fixture.scopes().allSatisfy { $0.cursor != nil && $0.checksum != nil })
    }

    @Test("push, pull and rebuild present the bound client ID, not the ID the store was opened with")
    func requestsPresentTheBoundID() throws {
        let server = try RunningServer(rows: 20)
        let fixture = try StoreFixture(clientID: "bound-device", applyDemo: false)
        let transport = ServerTransport(server: server)
        _ = try CycleRecorder().cycle(SyncContext(store: fixture.store, transport: transport, pageLimit: 40)).run()
        fixture.store.close()
        let reopened = try ClientStore(configuration: StoreFixture.configuration(
            path: fixture.path, clientID: "configured-other", uuids: fixture.uuids))
        defer { reopened.close() }
        try reopened.execute(
            Self.insert, [.text("bound-1"), .text("note"), .text("2026-01-02T03:04:05.000Z")])
        let recording = FirstConnectLosingTransport(transport, losing: false)
        let summary = try CycleRecorder().cycle(SyncContext(store: reopened, transport: recording, pageLimit: 40)).run()
        #expect(summary.mutationsAccepted == 1)
        try RebuildApplier(context: SyncContext(store: reopened, transport: transport, pageLimit: 40))
            .rebuild(scope: "user:alice")
        let sent = transport.lastExchange.map(\.request) ?? []
        #expect(try Self.clientID(of: sent) == "bound-device")
        for path in ["/sync/connect", "/sync/push", "/sync/pull"] {
            let bodies = recording.bodies(path)
            #expect(!bodies.isEmpty, "no \(path) request")
            #expect(try bodies.allSatisfy { try Self.clientID(of: $0) == "bound-device" }, "\(path)")
        }
    }
}
