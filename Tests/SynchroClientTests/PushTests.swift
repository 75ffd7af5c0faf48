import Foundation
import SQLiteKit
import SynchroClient
import SynchroProtocol
import SynchroServer
import Testing
import _SeedkitTestSupport
import SynchroStore

@Suite("Push: sealing, exchange and reconciliation against the reference server")
struct PushTests {
    @Test("A captured insert is sealed, pushed and applied: the row has its server version and the queue is empty")
    func capturedInsertIsApplied() throws {
        let server = try RunningServer()
        let client = try ConnectedClient(server: server, clientID: "push-applied")
        try client.insertTask("t-1")
        let outcomes = try pushAll(client)
        #expect(outcomes == [.reconciled(.init(applied: 1, conflicts: 0, rejectedTerminal: 0))])
        #expect(try client.taskVersion("t-1")?.isEmpty == false)
        #expect(try client.taskTitle("t-1") == "Walk")
        #expect(try client.unresolvedCount() == 0)
        #expect(try client.states() == ["accepted"])
        #expect(try client.batchStates() == ["completed"])
        // Reconciliation wrote under capture suppression: nothing echoed into the ledger.
        #expect(try client.store.ledger().count == 1)
        #expect(try client.store.meta(.syncLock) == "0")
    }

    @Test("A batch is durable once sealed: after reopening the store the same bytes are sent under the same ID")
    func sealedBatchSurvivesReopen() throws {
        let server = try RunningServer()
        // StoreFixture.reopen binds the default client ID, so this client uses it.
        let client = try ConnectedClient(server: server, clientID: "ios-device-9")
        try client.insertTask("t-1")
        try client.insertTask("t-2")
        let sealed = try #require(try BatchSealer(store: client.store).nextBatch())
        #expect(sealed.mutationIDs.count == 2)
        #expect(try client.states() == ["sealed", "sealed"])
        try client.fixture.reopen()
        #expect(try client.store.pendingBatch() == sealed)
        let outcome = try client.exchange.pushNext()
        #expect(outcome == .reconciled(.init(applied: 2, conflicts: 0, rejectedTerminal: 0)))
        #expect(client.transport.bodies == [sealed.body])
        #expect(try client.unresolvedCount() == 0)
    }

    @Test("A lost response is retried with a byte-identical body and reconciled from the server's exact replay")
    func lostResponseRetriesIdenticalBytes() throws {
        let server = try RunningServer()
        let client = try ConnectedClient(server: server, clientID: "push-lost")
        try client.insertTask("t-1")
        try server.engine.inject(.loseResponse(route: "/sync/push", count: 1))
        #expect(throws: PushError.self) { try client.exchange.pushNext() }
        #expect(try client.states() == ["sealed"])
        #expect(try client.batchStates() == ["pending"])
        let outcome = try client.exchange.pushNext()
        #expect(outcome == .reconciled(.init(applied: 1, conflicts: 0, rejectedTerminal: 0)))
        let bodies = client.transport.bodies
        #expect(bodies.count == 2)
        #expect(bodies.first == bodies.last)
        #expect(try client.taskVersion("t-1") != nil)
        #expect(try client.states() == ["accepted"])
    }

    @Test("503 is retryable and the retry sends the same stored bytes")
    func unavailableIsRetryable() throws {
        let server = try RunningServer()
        let client = try ConnectedClient(server: server, clientID: "push-503")
        try client.insertTask("t-1")
        try server.engine.inject(.rejectRequests(route: "/sync/push", count: 1, status: 503))
        guard case .retryable(status: 503) = try #require(try client.exchange.pushNext()) else {
            Issue.record("expected a retryable outcome")
            return
        }
        #expect(try client.batchStates() == ["pending"])
        #expect(try client.exchange.pushNext() == .reconciled(.init(applied: 1, conflicts: 0, rejectedTerminal: 0)))
        #expect(client.transport.bodies.count == 2)
        #expect(client.transport.bodies.first == client.transport.bodies.last)
    }

    @Test("A stale-base update conflicts: the rejection is stored and the server's row and version are applied")
    func staleBaseConflict() throws {
        let server = try RunningServer()
        let first = try ConnectedClient(server: server, clientID: "push-conflict-a")
        let second = try ConnectedClient(server: server, clientID: "push-conflict-b")
        try first.insertTask("t-c", title: "Original")
        try pushAll(first)
        let original = try #require(try first.taskVersion("t-c"))
        // The second client holds the row at its first version, as a pull would have left it.
        try second.store.serverApply { transaction in
            try transaction.execute(
                "INSERT INTO tasks (id, owner_id, title, done, position) VALUES ('t-c', 'alice', 'Original', 0, 1)")
            try transaction.execute(
                "INSERT INTO _synchro_row_versions (table_name, record_id, server_version) VALUES ('tasks', 't-c', ?)",
                [.text(original)])
        }
        try first.store.execute("UPDATE tasks SET title = 'First wins' WHERE id = 't-c'")
        try pushAll(first)
        let current = try #require(try first.taskVersion("t-c"))
        #expect(current != original)

        try second.store.execute("UPDATE tasks SET title = 'Second loses' WHERE id = 't-c'")
        #expect(try second.store.ledger().first?.baseVersion == original)
        let outcomes = try pushAll(second)
        #expect(outcomes == [.reconciled(.init(applied: 0, conflicts: 1, rejectedTerminal: 0))])
        #expect(try second.taskTitle("t-c") == "First wins")
        #expect(try second.taskVersion("t-c") == current)
        #expect(try second.states() == ["rejected"])
        let rejection = try second.fixture.inspect { connection in
            try connection.rows("SELECT status, code, server_version FROM _synchro_rejected_mutations")
        }
        #expect(rejection == [[.text("conflict"), .text("version_conflict"), .text(current)]])
        #expect(try second.unresolvedCount() == 0)
    }

    @Test("An atomic group is sealed alone with atomic true and every member is applied")
    func atomicGroupSucceeds() throws {
        let server = try RunningServer()
        let client = try ConnectedClient(server: server, clientID: "push-atomic-ok")
        try client.insertTask("t-loose")
        try client.store.atomicWriteTransaction { transaction in
            for id in ["t-g1", "t-g2"] {
                try transaction.execute(
                    "INSERT INTO tasks (id, owner_id, title, done, position) VALUES (?, 'alice', 'G', 0, 1)",
                    [.text(id)])
            }
        }
        let outcomes = try pushAll(client)
        #expect(outcomes == [
            .reconciled(.init(applied: 1, conflicts: 0, rejectedTerminal: 0)),
            .reconciled(.init(applied: 2, conflicts: 0, rejectedTerminal: 0)),
        ])
        let bodies = client.transport.bodies.map { String(decoding: $0, as: UTF8.self) }
        #expect(bodies.count == 2)
        #expect(bodies.first?.contains("\"atomic\":true") == false)
        #expect(bodies.last?.contains("\"atomic\":true") == true)
        #expect(try client.states() == ["accepted", "accepted", "accepted"])
        #expect(try client.taskVersion("t-g1") != nil && client.taskVersion("t-g2") != nil)
    }

    @Test("A failing atomic group rejects every member: the conflict applies server state, the rest keep local rows")
    func atomicGroupFails() throws {
        let server = try RunningServer()
        let first = try ConnectedClient(server: server, clientID: "push-atomic-a")
        let second = try ConnectedClient(server: server, clientID: "push-atomic-b")
        try first.insertTask("t-dup", title: "Server copy")
        try pushAll(first)
        try second.store.atomicWriteTransaction { transaction in
            try transaction.execute(
                "INSERT INTO tasks (id, owner_id, title, done, position) VALUES ('t-ok', 'alice', 'Mine', 0, 1)")
            try transaction.execute(
                "INSERT INTO tasks (id, owner_id, title, done, position) VALUES ('t-dup', 'alice', 'Mine', 0, 1)")
        }
        let outcomes = try pushAll(second)
        #expect(outcomes == [.reconciled(.init(applied: 0, conflicts: 1, rejectedTerminal: 1))])
        #expect(try second.states() == ["rejected", "rejected"])
        let rejections = try second.fixture.inspect { connection in
            try connection.rows("SELECT record_id, status, code FROM _synchro_rejected_mutations ORDER BY record_id")
        }
        #expect(rejections == [
            [.text("t-dup"), .text("conflict"), .text("row_already_exists")],
            [.text("t-ok"), .text("rejected_terminal"), .text("atomic_batch_rejected")],
        ])
        #expect(try second.taskTitle("t-dup") == "Server copy")
        #expect(try second.taskVersion("t-dup") == first.taskVersion("t-dup"))
        #expect(try second.taskTitle("t-ok") == "Mine")
        #expect(try second.taskVersion("t-ok") == nil)
    }

    @Test("A mutation over the per-mutation limit gets exceeds_push_limit and the next mutation is still sent")
    func overLimitMutationIsExcluded() throws {
        let server = try RunningServer()
        let client = try ConnectedClient(server: server, clientID: "push-limit")
        try client.insertTask("t-big", title: String(repeating: "x", count: PushLimits.maxNormalizedMutationOctets))
        try client.insertTask("t-small")
        let outcomes = try pushAll(client)
        #expect(outcomes == [.reconciled(.init(applied: 1, conflicts: 0, rejectedTerminal: 0))])
        #expect(try client.states() == ["exceeds_push_limit", "accepted"])
        #expect(client.transport.bodies.count == 1)
        #expect(try client.taskVersion("t-big") == nil)
        #expect(try client.unresolvedCount() == 0)
        #expect(try client.batchStates() == ["completed"])
    }

    @Test("After client_generation_expired the batch is kept and a successor carries the same mutation IDs")
    func expiredGenerationRenewsBatch() throws {
        let server = try RunningServer()
        let client = try ConnectedClient(server: server, clientID: "push-renew")
        try client.insertTask("t-1")
        try server.engine.inject(.expireClientGeneration(user: "alice", client: "push-renew"))
        let sealed = try #require(try BatchSealer(store: client.store).nextBatch())
        #expect(try client.exchange.send(sealed) == .renewalRequired(code: "client_generation_expired"))
        #expect(try client.batchStates() == ["renewal_required"])
        try client.reconnect(server: server)
        let successor = try client.exchange.renewBatch()
        #expect(successor.batchID != sealed.batchID)
        #expect(successor.mutationIDs == sealed.mutationIDs)
        #expect(try client.batchStates() == ["superseded", "pending"])
        let outcome = try client.exchange.send(successor)
        #expect(outcome == .reconciled(.init(applied: 1, conflicts: 0, rejectedTerminal: 0)))
        #expect(try client.batchStates() == ["superseded", "completed"])
        #expect(try client.states() == ["accepted"])
    }

    @Test("An update captured while its insert is sealed waits, then is sent with the version the insert got")
    func dependentBecomesSendableWithReturnedVersion() throws {
        let server = try RunningServer()
        let client = try ConnectedClient(server: server, clientID: "push-dependent")
        try client.insertTask("t-1")
        let first = try #require(try BatchSealer(store: client.store).nextBatch())
        try client.store.execute("UPDATE tasks SET title = 'Later' WHERE id = 't-1'")
        let update = try #require(try client.store.ledger().last)
        #expect(update.dependencyMutationID == first.mutationIDs.first)
        #expect(update.baseVersion == nil)
        #expect(try client.exchange.send(first) == .reconciled(.init(applied: 1)))
        // The later local intent is kept on the row; only the version moved.
        #expect(try client.taskTitle("t-1") == "Later")
        let inserted = try #require(try client.taskVersion("t-1"))
        let refreshed = try #require(try client.store.ledger().last)
        #expect(refreshed.baseVersion == inserted)
        #expect(refreshed.dependencyMutationID == nil)
        #expect(try pushAll(client) == [.reconciled(.init(applied: 1))])
        #expect(try client.states() == ["accepted", "accepted"])
        #expect(try client.taskVersion("t-1") != inserted)
    }

    @Test("A dependent of a conflicted mutation becomes blocked_by_predecessor and is never sent")
    func dependentOfConflictIsBlocked() throws {
        let server = try RunningServer()
        let first = try ConnectedClient(server: server, clientID: "push-blocked-a")
        let second = try ConnectedClient(server: server, clientID: "push-blocked-b")
        try first.insertTask("t-b", title: "Server copy")
        try pushAll(first)
        try second.insertTask("t-b", title: "Mine")
        let batch = try #require(try BatchSealer(store: second.store).nextBatch())
        try second.store.execute("UPDATE tasks SET title = 'Mine again' WHERE id = 't-b'")
        #expect(try second.exchange.send(batch) == .reconciled(.init(conflicts: 1)))
        #expect(try second.states() == ["rejected", "blocked_by_predecessor"])
        #expect(try pushAll(second).isEmpty)
        #expect(second.transport.bodies.count == 1)
    }

    @Test("A response that misses an outcome is refused before any state changes")
    func incompleteResponseChangesNothing() throws {
        let server = try RunningServer()
        let client = try ConnectedClient(server: server, clientID: "push-contract")
        try client.insertTask("t-1")
        let batch = try #require(try BatchSealer(store: client.store).nextBatch())
        let before = try client.fixture.inspect(databaseFingerprint)
        let forged = Array("""
            {"batch_id":"\(batch.batchID)","server_time":"2026-11-29T00:00:00.000000Z","accepted":[],"rejected":[]}
            """.utf8)
        #expect(throws: PushError.responseContract(rule: "missing_outcome")) {
            try PushReconciler(store: client.store).reconcile(batch: batch, responseBody: forged)
        }
        #expect(try client.fixture.inspect(databaseFingerprint) == before)
        #expect(try client.batchStates() == ["pending"])
    }

    @Test("An envelope that alone breaks the request limit seals nothing and records a blocking invalid_request")
    func oversizedEnvelopeRecordsBlockingError() throws {
        let clientID = String(repeating: "c", count: PushLimits.maxRequestBodyOctets)
        let fixture = try StoreFixture(clientID: clientID)
        // A connected store: a generation and the bound client ID (which push presents, not the configured one).
        try fixture.inspect { connection in
            try connection.run("INSERT INTO _synchro_meta (key, value) VALUES ('client_generation', '1')")
            try connection.run(
                "INSERT INTO _synchro_meta (key, value) VALUES ('client_server_id', ?)", [.text(clientID)])
        }
        try fixture.store.execute(
            "INSERT INTO tasks (id, owner_id, title, done, position) VALUES ('t-1', 'alice', 'T', 0, 1)")
        #expect(throws: PushError.reservedEnvelopeTooLarge) { try BatchSealer(store: fixture.store).nextBatch() }
        #expect(try fixture.ledgerSummary() == ["insert tasks/t-1 unsealed"])
        let blocking = try fixture.inspect { connection in
            try connection.rows("SELECT operation, code, retryable, recovery_action FROM _synchro_blocking_error")
        }
        #expect(blocking == [[.text("push"), .text("invalid_request"), .integer(0), .text("none")]])
        #expect(try fixture.inspect { try $0.scalar("SELECT count(*) FROM _synchro_push_batches") } == .integer(0))
    }

    @Test("An over-limit update is excluded and its same-row dependent becomes blocked_by_predecessor")
    func overLimitBlocksDependents() throws {
        let server = try RunningServer()
        let client = try ConnectedClient(server: server, clientID: "push-limit-dependent")
        try client.insertTask("t-1")
        let first = try #require(try BatchSealer(store: client.store).nextBatch())
        let huge = String(repeating: "x", count: PushLimits.maxNormalizedMutationOctets)
        try client.store.execute("UPDATE tasks SET title = ? WHERE id = 't-1'", [.text(huge)])
        // A separate atomic run is never merged into the huge update, so it stays its dependent.
        try client.store.atomicWriteTransaction { transaction in
            try transaction.execute("UPDATE tasks SET done = 1 WHERE id = 't-1'")
        }
        #expect(try client.exchange.send(first) == .reconciled(.init(applied: 1)))
        #expect(try pushAll(client).isEmpty)
        #expect(try client.states() == ["accepted", "exceeds_push_limit", "blocked_by_predecessor"])
        #expect(client.transport.bodies.count == 1)
    }
}
