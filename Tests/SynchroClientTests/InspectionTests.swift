import SQLiteKit
import SynchroClient
import Testing
import SynchroStore

/// `ClientStore.inspect()`: the operator's view of a store, with presence and counts instead of secrets.
@Suite("client inspection")
struct InspectionTests {
    @Test("a store with only the demo schema reports the schema and nothing else")
    func freshStoreWithSchema() throws {
        let fixture = try StoreFixture()
        let inspection = try fixture.store.inspect()
        #expect(inspection.schemaVersion == 1)
        #expect(inspection.schemaHash == "8d2e3503e86a2ad28deff4980ecc104635dc6e5c0a9f4dc6b17c0c135cba40ee")
        #expect(inspection.clientID == nil)
        #expect(inspection.generation == 0)
        #expect(inspection.scopeSetVersion == 0)
        #expect(inspection.scopes.isEmpty)
        #expect(inspection.mutations.isEmpty)
        #expect(inspection.pendingMutationCount == 0)
        #expect(inspection.batches.isEmpty)
        #expect(inspection.rejections.isEmpty)
        #expect(inspection.blockingError == nil)
    }

    @Test("an empty store reports no schema")
    func emptyStore() throws {
        let fixture = try StoreFixture(applyDemo: false)
        let inspection = try fixture.store.inspect()
        #expect(inspection.schemaVersion == 0)
        #expect(inspection.schemaHash == nil)
    }

    @Test("application writes show up as pending mutations by lifecycle state")
    func pendingMutations() throws {
        let fixture = try StoreFixture()
        try fixture.store.execute(taskInsertSQL("t1"))
        try fixture.store.execute(taskInsertSQL("t2"))
        let inspection = try fixture.store.inspect()
        #expect(inspection.mutations == [.unsealed: 2])
        #expect(inspection.pendingMutationCount == 2)
    }

    @Test("resolved ledger entries are counted by state but are not pending")
    func resolvedEntriesAreNotPending() throws {
        let fixture = try StoreFixture()
        try fixture.store.execute(taskInsertSQL("t1"))
        try fixture.store.execute(taskInsertSQL("t2"))
        try fixture.inspect { connection in
            try connection.run(
                "UPDATE _synchro_pending_changes SET lifecycle_state = 'accepted' WHERE record_id = ?", [.text("t1")])
        }
        let inspection = try fixture.store.inspect()
        #expect(inspection.mutations == [.accepted: 1, .unsealed: 1])
        #expect(inspection.pendingMutationCount == 1)
    }

    @Test("a connected and rebuilt store reports its client, generation and verified scopes")
    func syncedStore() throws {
        let sync = try SyncFixture(rows: 40)
        try sync.connectAndRebuild()
        let inspection = try sync.store.inspect()
        #expect(inspection.clientID == "ios-device-9")
        #expect(inspection.generation > 0)
        #expect(inspection.scopeSetVersion > 0)
        #expect(!inspection.scopes.isEmpty)
        for scope in inspection.scopes {
            #expect(scope.state == .verified)
            #expect(scope.hasCursor && scope.hasChecksum)
        }
    }

    @Test("scope state: no cursor is rebuild required, a recorded attempt is rebuilding")
    func scopeStates() throws {
        let sync = try SyncFixture(rows: 40)
        try sync.connectAndRebuild()
        let ids = try sync.store.inspect().scopes.map(\.scopeID)
        try #require(ids.count >= 2)
        try sync.storeFixture.inspect { connection in
            try connection.run(
                "UPDATE _synchro_scopes SET cursor = NULL, checksum = NULL WHERE scope_id = ?", [.text(ids[0])])
            try connection.run("""
                INSERT INTO _synchro_rebuild_attempts
                    (scope_id, rebuild_id, client_generation, schema_version, schema_hash, generation, page_limit)
                VALUES (?, 'r1', 1, 1, 'h', 1, 10)
                """, [.text(ids[1])])
        }
        let scopes = try sync.store.inspect().scopes
        #expect(scopes[0].state == .rebuildRequired)
        #expect(!scopes[0].hasCursor && !scopes[0].hasChecksum)
        #expect(scopes[1].state == .rebuilding)
        #expect(scopes[1].hasCursor)
    }

    @Test("rejections, batches and the blocking error are reported without rows or messages")
    func rejectionsBatchesAndBlockingError() throws {
        let fixture = try StoreFixture()
        try fixture.inspect { connection in
            try connection.execute("""
                INSERT INTO _synchro_rejected_mutations
                    (mutation_id, table_name, record_id, status, code, message, server_row_json, created_at, updated_at)
                VALUES ('m2', 'tasks', 't9', 'rejected', 'version_conflict', 'title was secret-title',
                    '{"title":"secret-title"}', 'now', 'now'),
                    ('m1', 'notes', 'n9', 'rejected', 'forbidden', NULL, NULL, 'now', 'now');
                INSERT INTO _synchro_push_batches (batch_id, request_json, pending_json, schema_json, state, created_at)
                VALUES ('b1', '{}', '[]', '{}', 'pending', 'now'), ('b2', '{}', '[]', '{}', 'completed', 'now'),
                    ('b3', '{}', '[]', '{}', 'completed', 'now');
                INSERT INTO _synchro_blocking_error
                    (singleton, operation, code, retryable, message, recovery_action, metadata_json, created_at)
                VALUES (1, 'connect', 'schema_mismatch', 0, 'the secret message', 'schema_reset', '{}', 'now');
                """)
        }
        let inspection = try fixture.store.inspect()
        #expect(inspection.rejections.map(\.mutationID) == ["m1", "m2"])
        #expect(inspection.rejections.map(\.tableName) == ["notes", "tasks"])
        #expect(inspection.rejections.map(\.code) == ["forbidden", "version_conflict"])
        #expect(inspection.batches == ["pending": 1, "completed": 2])
        let blocking = try #require(inspection.blockingError)
        #expect(blocking.operation == "connect")
        #expect(blocking.code == "schema_mismatch")
        #expect(!blocking.retryable)
        #expect(blocking.recoveryAction == "schema_reset")
        #expect(!"\(inspection)".contains("secret"))
    }

    @Test("inspecting writes nothing: capture stays on and the ledger is unchanged")
    func inspectionIsReadOnly() throws {
        let fixture = try StoreFixture()
        try fixture.store.execute(taskInsertSQL("t1"))
        let before = try fixture.ledgerSummary()
        _ = try fixture.store.inspect()
        #expect(try fixture.ledgerSummary() == before)
        #expect(try fixture.store.meta(.syncLock) == "0")
    }
}
