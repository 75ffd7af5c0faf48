import SQLiteKit
import Synchronization
import SynchroClient
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// Outcomes decided under an earlier schema (client contract §7.1): a push whose response was lost, a schema
/// published before the replay, and the replayed outcome carrying the `outcome_schema` the server decided under.
/// The row is verified under that archived schema; it is applied when the active table still has its fields, and
/// otherwise written nowhere in place while the scopes that hold it are rebuilt.
@Suite("Historical outcomes")
struct HistoricalOutcomeTests {
    static let insert = "INSERT INTO notes (id, owner_id, title, pinned, updated_at) VALUES (?, 'alice', ?, 0, ?)"

    /// Pushes one note whose response is lost, publishes `edit` as `transition`, reconnects and pushes again.
    private func replayAcross(
        transition: String, affected: [String]? = nil, _ edit: (inout ManifestEdit) -> Void
    ) throws -> (SyncFixture, PushExchange.Outcome?, SchemaReference) {
        let fixture = try SyncFixture(rows: 60, pageLimit: 40)
        try fixture.connectAndRebuild()
        try fixture.store.execute(
            Self.insert, [.text("historic-1"), .text("Before"), .text("2026-01-02T03:04:05.000Z")])
        let losing = LosingTransport(fixture.transport, losing: "/sync/push")
        #expect(throws: PushError.self) { try PushExchange(store: fixture.store, transport: losing).pushNext() }
        let target = try SchemaPublisher(fixture.server).publish(transition: transition, affected: affected, edit)
        try fixture.connect()
        var outcome = try PushExchange(store: fixture.store, transport: fixture.transport).pushNext()
        if case .renewalRequired = outcome {
            _ = try PushExchange(store: fixture.store, transport: fixture.transport).renewBatch()
            outcome = try PushExchange(store: fixture.store, transport: fixture.transport).pushNext()
        }
        return (fixture, outcome, target)
    }

    @Test("an outcome under an earlier schema whose table did not change is verified under it and applied")
    func projectableOutcomeIsApplied() throws {
        let (fixture, outcome, _) = try replayAcross(transition: "class_2") {
            $0.addField("tbl_products", "fld_product_origin", type: "string")
        }
        #expect(outcome == .reconciled(.init(applied: 1, conflicts: 0, rejectedTerminal: 0)))
        #expect(try fixture.count(
            "SELECT count(*) FROM _synchro_pending_changes WHERE lifecycle_state = 'accepted'") == 1)
        #expect(try fixture.count(
            "SELECT count(*) FROM _synchro_row_versions WHERE table_name = 'notes' AND record_id = 'historic-1'") == 1)
        // The outcome is stored exactly: it names the schema it was decided under, not the active one.
        let stored = try fixture.storeFixture.inspect {
            try $0.scalar("SELECT accepted_json FROM _synchro_pending_changes")?.textValue ?? ""
        }
        let outcomeSchema = try StrictJSONParser().parse(stored).objectValue?["outcome_schema"]
        let schema = try SchemaReference(json: outcomeSchema ?? .null)
        #expect(schema.version == 1)
        #expect(try fixture.scopes().allSatisfy { $0.cursor != nil })
    }

    @Test("an outcome under an earlier schema that the table outgrew changes no row in place and rebuilds its scopes")
    func incompatibleOutcomeInvalidatesScopes() throws {
        let (fixture, outcome, _) = try replayAcross(transition: "class_2") {
            $0.addField("tbl_notes", "fld_note_mood", type: "string")
        }
        #expect(outcome == .reconciled(.init(applied: 1, conflicts: 0, rejectedTerminal: 0)))
        #expect(try fixture.count(
            "SELECT count(*) FROM _synchro_pending_changes WHERE lifecycle_state = 'accepted'") == 1)
        // No version was written from a row the active schema cannot hold; the local row keeps its values.
        #expect(try fixture.count(
            "SELECT count(*) FROM _synchro_row_versions WHERE table_name = 'notes' AND record_id = 'historic-1'") == 0)
        #expect(try fixture.count("SELECT count(*) FROM notes WHERE id = 'historic-1' AND title = 'Before'") == 1)
        let invalidated = try fixture.scopes().filter { $0.cursor == nil }.map(\.id)
        #expect(!invalidated.isEmpty)
        // A rebuild of those scopes brings the row under the current schema.
        for scope in invalidated { try RebuildApplier(context: fixture.context).rebuild(scope: scope) }
        #expect(try fixture.count(
            "SELECT count(*) FROM _synchro_row_versions WHERE table_name = 'notes' AND record_id = 'historic-1'") == 1)
    }

    @Test("an outcome naming a schema the store never activated fails before any change")
    func unknownOutcomeSchemaFails() throws {
        let fixture = try SyncFixture(rows: 60, pageLimit: 40)
        try fixture.connectAndRebuild()
        try fixture.store.execute(
            Self.insert, [.text("historic-2"), .text("Before"), .text("2026-01-02T03:04:05.000Z")])
        fixture.transport.setEdit { path, reply in
            guard path == "/sync/push", reply.status == 200 else { return reply }
            let text = Self.renumberOutcomeSchema(String(decoding: reply.body, as: UTF8.self))
            return SyncReply(status: reply.status, body: Array(text.utf8))
        }
        #expect(throws: PushError.outcomeSchemaUnavailable(version: 7)) {
            try PushExchange(store: fixture.store, transport: fixture.transport).pushNext()
        }
        #expect(try fixture.count(
            "SELECT count(*) FROM _synchro_pending_changes WHERE lifecycle_state = 'sealed'") == 1)
    }

    /// The response with every `outcome_schema` version replaced by 7, a version the store never activated.
    static func renumberOutcomeSchema(_ text: String) -> String {
        guard let json = try? StrictJSONParser().parse(Array(text.utf8)) else { return text }
        func edit(_ value: JSONValue) -> JSONValue {
            switch value {
            case .object(let object):
                return .object(JSONObject(object.members.map { member in
                    guard member.key == "outcome_schema", case .object(let schema) = member.value else {
                        return JSONMember(member.key, edit(member.value))
                    }
                    return JSONMember(member.key, .object(JSONObject(schema.members.map {
                        $0.key == "version" ? JSONMember("version", .number(JSONNumber(7))) : $0
                    })))
                }))
            case .array(let values): return .array(values.map(edit))
            default: return value
            }
        }
        return (try? CanonicalJSON.string(edit(json))) ?? text
    }
}

/// Forwards to the server and loses the first response on `path`: the server committed, the client saw a failure.
final class LosingTransport: SyncTransport, Sendable {
    struct Lost: Error {}
    let inner: any SyncTransport
    let path: String
    private let remaining = Mutex(1)

    init(_ inner: any SyncTransport, losing path: String) {
        self.inner = inner
        self.path = path
    }

    func post(path: String, body: [UInt8]) throws -> SyncReply {
        let reply = try inner.post(path: path, body: body)
        let lose = path == self.path && remaining.withLock { count in
            defer { count = max(0, count - 1) }
            return count > 0
        }
        if lose { throw Lost() }
        return reply
    }
}
