import Foundation
import SQLiteKit
import SynchroClient
import Testing

@Suite("Pre-wire normalization")
struct NormalizationTests {
    static func fixture() throws -> StoreFixture {
        let fixture = try StoreFixture()
        try CaptureTests.seedRow(fixture, id: "t1", version: "v1")
        return fixture
    }

    @Test("insert plus updates becomes one insert with the final fields, taking the first source's place")
    func insertPlusUpdates() throws {
        let fixture = try Self.fixture()
        try fixture.store.execute(taskInsertSQL("n", title: "a", position: 1))
        try fixture.store.execute("INSERT INTO categories (id, name) VALUES (1, 'later row')")
        try fixture.store.execute("UPDATE tasks SET title = 'b' WHERE id = 'n'")
        try fixture.store.execute("UPDATE tasks SET title = 'c', done = 1 WHERE id = 'n'")
        try fixture.store.normalizePendingMutations()
        let ledger = try fixture.store.ledger()
        #expect(ledger.map(\.state) == [
            .supersededBeforeSend, .unsealed, .supersededBeforeSend, .supersededBeforeSend, .unsealed,
        ])
        let merged = try #require(ledger.last)
        #expect(merged.sourceKind == .normalized)
        #expect(merged.operation == .insert)
        #expect(merged.captureUUID == merged.mutationID)
        #expect(merged.clientVersion == ledger[3].clientVersion)
        let stamps = try fixture.inspect {
            try $0.rows("SELECT created_at, updated_at FROM _synchro_pending_changes WHERE mutation_id = ?",
                        [.text(merged.mutationID)])
        }
        #expect(stamps == [[.text("2023-11-14T22:13:20.123000Z"), .text("2023-11-14T22:13:20.123000Z")]])
        let title = try #require(merged.fields.first { $0.fieldID == "fld_task_title" })
        #expect(title.text == "c")
        #expect(merged.fields.first { $0.fieldID == "fld_task_done" }?.integer == 1)
        #expect([ledger[0], ledger[2], ledger[3]].allSatisfy { $0.normalizedMutationID == merged.mutationID })
        // Capture order: the normalized insert keeps the first source's place before the later category.
        let unresolved = try fixture.store.unresolvedMutations()
        #expect(unresolved.map(\.tableName) == ["tasks", "categories"])
    }

    @Test("update plus updates becomes one update from the original base")
    func updatePlusUpdates() throws {
        let fixture = try Self.fixture()
        try fixture.store.execute("UPDATE tasks SET title = 'b' WHERE id = 't1'")
        try fixture.store.execute("UPDATE tasks SET position = 4 WHERE id = 't1'")
        try fixture.store.normalizePendingMutations()
        let unresolved = try fixture.store.unresolvedMutations()
        #expect(unresolved.count == 1)
        #expect(unresolved.first?.operation == .update)
        #expect(unresolved.first?.baseVersion == "v1")
        #expect(unresolved.first?.dependencyMutationID == nil)
        #expect(unresolved.first?.fields.map(\.fieldID) == ["fld_task_position", "fld_task_title"])
        #expect(MutationPresence.violation(of: try #require(unresolved.first)) == nil)
    }

    @Test("update plus delete becomes one delete from the original base, without values")
    func updatePlusDelete() throws {
        let fixture = try Self.fixture()
        try fixture.store.execute("UPDATE tasks SET title = 'b' WHERE id = 't1'")
        try fixture.store.execute("DELETE FROM tasks WHERE id = 't1'")
        try fixture.store.normalizePendingMutations()
        let unresolved = try fixture.store.unresolvedMutations()
        #expect(unresolved.count == 1)
        #expect(unresolved.first?.operation == .delete)
        #expect(unresolved.first?.baseVersion == "v1")
        #expect(unresolved.first?.fields.isEmpty == true)
    }

    @Test("insert plus delete becomes no server mutation: both sources are cancelled with one cancellation ID")
    func insertPlusDelete() throws {
        let fixture = try Self.fixture()
        try fixture.store.execute(taskInsertSQL("n", title: "a", position: 1))
        try fixture.store.execute("UPDATE tasks SET title = 'b' WHERE id = 'n'")
        try fixture.store.execute("DELETE FROM tasks WHERE id = 'n'")
        try fixture.store.normalizePendingMutations()
        let ledger = try fixture.store.ledger()
        #expect(ledger.map(\.state) == [.cancelledBeforeSend, .cancelledBeforeSend, .cancelledBeforeSend])
        #expect(Set(ledger.compactMap(\.normalizedMutationID)).count == 1)
        #expect(try fixture.store.unresolvedMutations().isEmpty)
    }

    @Test("a delete followed by a write of the same row is not merged: the later write is blocked")
    func deleteThenInsert() throws {
        let fixture = try Self.fixture()
        try fixture.store.execute("DELETE FROM tasks WHERE id = 't1'")
        try fixture.store.execute(taskInsertSQL("t1", title: "again", position: 1))
        try fixture.store.normalizePendingMutations()
        let ledger = try fixture.store.ledger()
        #expect(ledger.map(\.operation) == [.delete, .insert])
        #expect(ledger.map(\.state) == [.unsealed, .blockedByPredecessor])
    }

    @Test("normalizing twice changes nothing more")
    func idempotent() throws {
        let fixture = try Self.fixture()
        try fixture.store.execute("UPDATE tasks SET title = 'b' WHERE id = 't1'")
        try fixture.store.execute("UPDATE tasks SET title = 'c' WHERE id = 't1'")
        try fixture.store.normalizePendingMutations()
        let once = try fixture.inspect(databaseFingerprint)
        try fixture.store.normalizePendingMutations()
        #expect(try fixture.inspect(databaseFingerprint) == once)
    }
}
