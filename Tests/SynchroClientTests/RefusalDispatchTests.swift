import Foundation
import SQLiteKit
import Synchronization
import SynchroClient
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// Every non-retryable row of the client contract's dispatch table ("Errors and backoff", "Strict dispatch";
/// `spec/wire-protocol.md` §8.2) is stored as the blocking error with its recovery action when the server answers
/// it, on every operation, and nothing is sent again until that recovery is taken: a `retry` row only after the
/// explicit acknowledgement (then the same sealed bytes go out), a `none` row never (issue #16, item 2).
@Suite("Refusals of the dispatch table are stored and never resent blindly")
struct RefusalDispatchTests {
    /// The contract's non-retryable rows, written out here independently of the engine's table.
    static let rows: [(status: Int, code: String, recovery: String)] = [
        (400, "invalid_request", "retry"),
        (400, "invalid_schema_reference", "retry"),
        (401, "auth_required", "retry"),
        (409, "idempotency_conflict", "none"),
        (409, "client_retired", "none"),
        (426, "upgrade_required", "retry"),
        (500, "sync_integrity_failure", "retry"),
    ]

    /// Which request each operation's refusal answers.
    static let operations: [(operation: String, path: String)] = [
        ("connect", "/sync/connect"), ("push", "/sync/push"), ("pull", "/sync/pull"), ("rebuild", "/sync/rebuild"),
    ]

    @Test("the engine's table is the contract's: codes, statuses, recovery actions, all non-retryable")
    func tableMatchesContract() {
        #expect(SyncRefusal.table.map { "\($0.status) \($0.code) \($0.recoveryAction)" }
            == Self.rows.map { "\($0.status) \($0.code) \($0.recovery)" })
        #expect(SyncRefusal.table.allSatisfy { !$0.isRetryable && !$0.meaning.isEmpty })
        for recovery in ["client_generation_expired", "rebuild_restart_required", "retry_later", "capture_pending"] {
            #expect(SyncRefusal.named(recovery) == nil, "\(recovery) is a recovery dispatch or retryable")
        }
        #expect(SyncRefusal.matching(status: 409, code: "invalid_request") == nil)
    }

    @Test("a refusal is stored with its recovery action and the refused request is not sent again",
          arguments: rows.indices, operations.indices)
    func refusalIsStored(row: Int, operation: Int) throws {
        let (status, code, recovery) = Self.rows[row]
        let (name, path) = Self.operations[operation]
        let fixture = try SyncFixture(rows: 20, pageLimit: 40)
        let cycle = SyncCycle(context: fixture.context, delay: { _ in }, random: RandomSource { 0 })
        _ = try cycle.run()
        if name == "push" {
            try fixture.store.execute(
                "INSERT INTO notes (id, owner_id, title, pinned, updated_at) VALUES (?, 'alice', 'R', 0, ?)",
                [.text("note-refused"), .text("2026-01-02T03:04:05.000Z")])
        }
        if name == "rebuild" {
            // A scope made rebuild-required, as a rebuild_local action or a failed terminal checksum leaves it.
            try fixture.storeFixture.inspect { connection in
                try connection.execute("""
                    UPDATE _synchro_scopes SET cursor = NULL, checksum = NULL, local_checksum = '',
                        generation = generation + 1
                    WHERE scope_id = 'catalog'
                    """)
            }
        }
        let sent = Mutex<[String]>([])
        fixture.transport.setEdit { requested, reply in
            sent.withLock { $0.append(requested) }
            guard requested == path else { return reply }
            let body = #"{"error":{"code":"\#(code)","message":"m","retryable":false}}"#
            return SyncReply(status: status, body: Array(body.utf8))
        }
        let blocked = SyncCycleError.blocked(operation: name, code: code, recoveryAction: recovery)
        let failure = try #require(throws: SyncCycleError.self) { try cycle.run() }
        #expect(failure == blocked)
        #expect(failure.code == code && !failure.isRetryable)
        #expect(cycle.status.state == .error)
        #expect(try fixture.count("SELECT count(*) FROM _synchro_backoff") == 0)
        let stored = try fixture.storeFixture.inspect { connection in
            try connection.query("""
                SELECT operation, code, retryable, recovery_action, metadata_json FROM _synchro_blocking_error
                """) { "\(try $0.text(at: 0)) \(try $0.text(at: 1)) \($0.int64(at: 2)) \(try $0.text(at: 3)) "
                    + (try $0.text(at: 4)) }
        }
        #expect(stored == ["\(name) \(code) 0 \(recovery) {\"http_status\":\"\(status)\"}"])
        let batch = try fixture.storeFixture.inspect { connection in
            try connection.query("SELECT state, request_json FROM _synchro_push_batches WHERE state = 'pending'") {
                "\(try $0.text(at: 0)) \(try $0.text(at: 1))"
            }
        }
        #expect(batch.count == (name == "push" ? 1 : 0))

        // Any later run sends nothing while the refusal is stored.
        sent.withLock { $0 = [] }
        fixture.transport.setEdit { requested, reply in
            sent.withLock { $0.append(requested) }
            return reply
        }
        #expect(throws: blocked) { try cycle.run() }
        #expect(sent.withLock { $0 } == [])

        guard recovery == "retry" else {
            #expect(throws: blocked) { try cycle.acknowledgeBlockingError() }
            #expect(throws: blocked) { try cycle.run() }
            #expect(sent.withLock { $0 } == [])
            return
        }
        // The explicit recovery: then the same sealed batch goes out, byte for byte, and reconciles.
        #expect(try cycle.acknowledgeBlockingError())
        _ = try cycle.run()
        #expect(sent.withLock { $0 }.first == "/sync/connect")
        if name == "push" {
            let request = try fixture.storeFixture.inspect { connection in
                try connection.query("SELECT request_json FROM _synchro_push_batches WHERE state = 'completed' "
                    + "ORDER BY created_at DESC LIMIT 1") { try $0.text(at: 0) }
            }
            #expect(batch.map { String($0.dropFirst("pending ".count)) } == request)
            #expect(try fixture.count("SELECT count(*) FROM _synchro_pending_changes WHERE lifecycle_state "
                + "= 'accepted'") == 1)
        }
    }
}
