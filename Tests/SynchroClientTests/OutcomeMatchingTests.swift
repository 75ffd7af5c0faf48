import SQLiteKit
import SynchroClient
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// Outcomes are matched by mutation ID, table and typed key, each with an exact `outcome_schema` (client contract
/// §7.1, `spec/wire-protocol.md` §4.8): every way a 200 can break that is a non-retryable local protocol error
/// that leaves the queue exactly as it was.
@Suite("Outcome matching")
struct OutcomeMatchingTests {
    /// One edit of the first accepted outcome of a real push response, and the rule it must break.
    struct Case: Sendable, CustomTestStringConvertible {
        let rule: String
        let edit: @Sendable (JSONObject, [JSONValue]) -> [JSONValue]
        var testDescription: String { rule }
    }

    static let cases: [Case] = [
        Case(rule: "duplicate_outcome") { first, rest in [.object(first), .object(first)] + rest },
        Case(rule: "unknown_mutation") { first, rest in
            [.object(first.replacing("mutation_id", .string("00000000-0000-4000-8000-000000000000")))] + rest
        },
        Case(rule: "missing_outcome") { _, rest in rest },
        Case(rule: "identity_mismatch") { first, rest in
            [.object(first.replacing("table", .string("tbl_products")))] + rest
        },
        Case(rule: "identity_mismatch") { first, rest in
            [.object(first.replacing("pk", .object(JSONObject([JSONMember("fld_note_id", .string("other"))]))))] + rest
        },
        Case(rule: "outcome_schema") { first, rest in
            [.object(JSONObject(first.members.filter { $0.key != "outcome_schema" }))] + rest
        },
        Case(rule: "outcome_schema") { first, rest in [.object(first.replacing("outcome_schema", .null))] + rest },
    ]

    @Test("a push 200 that breaks outcome matching is refused and changes no queue state", arguments: cases)
    func brokenMatchingIsRefused(_ broken: Case) throws {
        let fixture = try SyncFixture(rows: 60, pageLimit: 40)
        try fixture.connectAndRebuild()
        for id in ["match-1", "match-2"] {
            try fixture.store.execute(
                "INSERT INTO notes (id, owner_id, title, pinned, updated_at) VALUES (?, 'alice', 'Queued', 0, ?)",
                [.text(id), .text("2026-01-02T03:04:05.000Z")])
        }
        fixture.transport.setEdit { path, reply in
            guard path == "/sync/push", reply.status == 200,
                let object = try? StrictJSONParser().parse(reply.body).objectValue,
                let accepted = object["accepted"]?.arrayValue, let first = accepted.first?.objectValue
            else { return reply }
            let edited = object.replacing("accepted", .array(broken.edit(first, Array(accepted.dropFirst()))))
            return SyncReply(status: 200, body: (try? CanonicalJSON.encode(.object(edited))) ?? reply.body)
        }
        #expect(throws: PushError.responseContract(rule: broken.rule)) {
            try PushExchange(store: fixture.store, transport: fixture.transport).pushNext()
        }
        #expect(try fixture.count(
            "SELECT count(*) FROM _synchro_pending_changes WHERE lifecycle_state = 'sealed'") == 2)
        #expect(try fixture.count("SELECT count(*) FROM _synchro_push_batches WHERE state = 'pending'") == 1)
        #expect(try fixture.count("SELECT count(*) FROM _synchro_row_versions WHERE record_id LIKE 'match-%'") == 0)
    }
}
