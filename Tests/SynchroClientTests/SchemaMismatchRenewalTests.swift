import SQLiteKit
import Synchronization
import SynchroClient
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// A batch sealed under a schema the server has since replaced (client contract §6.1, §6.3, §8.2, §14.1): the
/// push answers 422 `schema_mismatch`, the cycle reconnects and applies the inline action, and the unchanged
/// mutations travel in a successor batch with a new ID under the current schema; the original is never resent.
@Suite("Schema mismatch renewal")
struct SchemaMismatchRenewalTests {
    @Test("422 schema_mismatch: the cycle reconnects, renews the batch under the new schema and never resends it")
    func cycleRenewsAfterSchemaMismatch() throws {
        let fixture = try SyncFixture(rows: 60, pageLimit: 40)
        let transport = RecordingTransport(fixture.transport)
        let context = fixture.context(over: transport)
        let recorder = CycleRecorder()
        _ = try recorder.cycle(context).run()
        try fixture.store.execute(
            "INSERT INTO notes (id, owner_id, title, pinned, updated_at) VALUES ('renewed-1', 'alice', 'T', 0, ?)",
            [.text("2026-01-02T03:04:05.000Z")])
        // Sealed before the publication, sent after it.
        let sealed = try #require(try BatchSealer(store: fixture.store).nextBatch())
        let target = try SchemaPublisher(fixture.server).publish(transition: "class_2") {
            $0.addField("tbl_products", "fld_product_origin", type: "string")
        }

        let summary = try recorder.cycle(context).run()

        #expect(summary.batchesRenewed == 1)
        #expect(summary.mutationsAccepted == 1)
        let pushes = transport.bodies("/sync/push").compactMap { try? StrictJSONParser().parse($0).objectValue }
        #expect(pushes.count == 2)
        #expect(pushes.first?["batch_id"]?.stringValue == sealed.batchID)
        #expect(pushes.last?["batch_id"]?.stringValue != sealed.batchID)
        #expect(try SchemaReference(json: pushes.last?["schema"] ?? .null) == target)
        func ids(_ push: JSONObject?) -> [String] {
            (push?["mutations"]?.arrayValue ?? []).compactMap { $0.objectValue?["mutation_id"]?.stringValue }
        }
        #expect(ids(pushes.first) == ids(pushes.last) && ids(pushes.first).count == 1)
        #expect(try fixture.count(
            "SELECT count(*) FROM _synchro_push_batches WHERE batch_id = '\(sealed.batchID)' AND state = 'superseded'")
            == 1)
        // A later cycle sends nothing again.
        _ = try recorder.cycle(context).run()
        #expect(transport.bodies("/sync/push").count == 2)
    }
}

/// Forwards every request and records each body by path.
final class RecordingTransport: SyncTransport, Sendable {
    let inner: any SyncTransport
    private let sent = Mutex<[(path: String, body: [UInt8])]>([])

    init(_ inner: any SyncTransport) {
        self.inner = inner
    }

    func bodies(_ path: String) -> [[UInt8]] { sent.withLock { $0.filter { $0.path == path }.map(\.body) } }

    func post(path: String, body: [UInt8]) throws -> SyncReply {
        sent.withLock { $0.append((path, body)) }
        return try inner.post(path: path, body: body)
    }
}
