import Foundation
import SQLiteKit
import SynchroClient
import SynchroProtocol
import Testing
import SynchroStore

@Suite("Capture")
struct CaptureTests {
    static let taskInsert = "INSERT INTO tasks (id, owner_id, title, done, position) VALUES (?, ?, ?, ?, ?)"

    /// Stores a server version for a row as server apply would, without capturing anything.
    static func seedRow(_ fixture: StoreFixture, id: String, version: String) throws {
        try fixture.store.serverApply { transaction in
            try transaction.execute(
                "INSERT INTO tasks (id, owner_id, title, done, position) VALUES (?, 'u1', 'Seeded', 0, 1)",
                [.text(id)])
            try transaction.execute(
                "INSERT INTO _synchro_row_versions (table_name, record_id, server_version) VALUES ('tasks', ?, ?)",
                [.text(id), .text(version)])
        }
    }

    @Test("an INSERT with a column list captures an insert with exactly the named writable fields")
    func insertWithFields() throws {
        let fixture = try StoreFixture()
        let changed = try fixture.store.execute(
            "INSERT INTO tasks (id, owner_id, title, done, position) VALUES ('t1', 'u1', 'Write', 1, 3)")
        #expect(changed == 1)
        let ledger = try fixture.store.ledger()
        let entry = try #require(ledger.first)
        #expect(ledger.count == 1)
        #expect(entry.operation == .insert)
        #expect(entry.state == .unsealed)
        #expect(entry.sourceKind == .application)
        #expect(entry.binding?.tableID == "tbl_tasks")
        #expect(entry.binding?.primaryKeyFieldID == "fld_task_id")
        #expect(entry.binding?.primaryKeyType == .string)
        #expect(entry.binding?.authoredSchema == (try demoManifest()).reference)
        #expect(entry.recordID == "t1")
        #expect(entry.baseVersion == nil)
        #expect(entry.dependencyMutationID == nil)
        #expect(entry.atomicGroupID == nil)
        #expect(entry.captureUUID == entry.mutationID)
        #expect(WireFormats.isCanonicalUUID(entry.mutationID))
        #expect(Array(entry.mutationID)[14] == "4")
        #expect(WireFormats.isTimestamp(entry.clientVersion))
        #expect(entry.clientVersion.hasSuffix("000Z"))
        #expect(entry.fields.map(\.fieldID) == allTaskInsertFields)
        #expect(entry.fields.map(\.kind) == [.boolean, .text, .integer, .text])
        let mutation = try entry.pushMutation()
        #expect(mutation.columns?.map(\.key) == allTaskInsertFields)
        #expect(mutation.columns?.first?.value == .bool(true))
        #expect(mutation.pkValue == .string("t1"))
    }

    @Test("an INSERT that names only the key is a key-only insert with no value rows")
    func keyOnlyInsert() throws {
        let fixture = try StoreFixture(applyDemo: false)
        try fixture.store.applySchema(try otherManifest())
        try fixture.store.execute("INSERT INTO items (id) VALUES ('k1')")
        let entry = try #require(try fixture.store.ledger().first)
        #expect(entry.operation == .insert)
        #expect(entry.fields.isEmpty)
        #expect(entry.recordID == "k1")
        let mutation = try entry.pushMutation()
        #expect(mutation.columns == [])
        #expect(mutation.pkValue == .string("k1"))
        #expect(MutationPresence.violation(of: entry) == nil)
    }

    @Test("an INSERT without a column list captures every writable column, NULL included")
    func insertWithoutColumnList() throws {
        let fixture = try StoreFixture()
        try fixture.store.execute("INSERT INTO tasks VALUES ('t2', 'u1', 'All', 0, NULL, 4)")
        let entry = try #require(try fixture.store.ledger().first)
        #expect(entry.fields.map(\.fieldID)
                == ["fld_task_done", "fld_task_due", "fld_task_owner", "fld_task_position", "fld_task_title"])
        let due = try #require(entry.fields.first { $0.fieldID == "fld_task_due" })
        #expect(due.kind == .null)
        #expect(due.wireValue() == .null)
    }

    @Test("INSERT … DEFAULT VALUES is a key-only insert")
    func defaultValues() throws {
        let fixture = try StoreFixture(applyDemo: false)
        try fixture.store.applySchema(try otherManifest(keyType: "int64"))
        try fixture.store.execute("INSERT INTO items DEFAULT VALUES")
        let entry = try #require(try fixture.store.ledger().first)
        #expect(entry.operation == .insert)
        #expect(entry.fields.isEmpty)
        #expect(entry.recordID == "1")
        #expect(try entry.pushMutation().pkValue == .string("1"))
    }

    @Test("an integer key is rendered as a JSON number and its record ID as canonical decimal text")
    func integerKey() throws {
        let fixture = try StoreFixture()
        try fixture.store.execute("INSERT INTO categories (id, name) VALUES (7, 'Seven')")
        let entry = try #require(try fixture.store.ledger().first)
        #expect(entry.recordID == "7")
        #expect(entry.binding?.primaryKeyType == .int)
        #expect(try entry.pushMutation().pkValue == .number(JSONNumber(7)))
    }

    @Test("an UPDATE captures only the changed writable fields, against the stored server version")
    func updateSomeFields() throws {
        let fixture = try StoreFixture()
        try Self.seedRow(fixture, id: "t1", version: "v41")
        #expect(try fixture.store.ledger().isEmpty)
        try fixture.store.execute("UPDATE tasks SET title = 'Renamed', done = 0, position = 9 WHERE id = 't1'")
        let entry = try #require(try fixture.store.ledger().first)
        #expect(entry.operation == .update)
        #expect(entry.baseVersion == "v41")
        #expect(entry.fields.map(\.fieldID) == ["fld_task_position", "fld_task_title"])
        #expect(try entry.pushMutation().baseVersion == "v41")
    }

    @Test("an UPDATE that changes no writable value captures nothing")
    func updateWithoutChange() throws {
        let fixture = try StoreFixture()
        try Self.seedRow(fixture, id: "t1", version: "v1")
        try fixture.store.execute("UPDATE tasks SET title = 'Seeded' WHERE id = 't1'")
        #expect(try fixture.store.ledger().isEmpty)
    }

    @Test("a DELETE on a table without deleted_at removes the row and captures a delete without values")
    func hardDelete() throws {
        let fixture = try StoreFixture()
        try Self.seedRow(fixture, id: "t1", version: "v7")
        #expect(try fixture.store.execute("DELETE FROM tasks WHERE id = 't1'") == 1)
        let entry = try #require(try fixture.store.ledger().first)
        #expect(entry.operation == .delete)
        #expect(entry.baseVersion == "v7")
        #expect(entry.fields.isEmpty)
        #expect(try entry.pushMutation().columns == nil)
        #expect(try fixture.store.query("SELECT count(*) FROM tasks") == [Row(columns: ["count(*)"], values: [0])])
    }

    @Test("a DELETE on a table with deleted_at keeps the row, sets deleted_at and captures one delete")
    func softDelete() throws {
        let fixture = try StoreFixture()
        try fixture.store.serverApply { transaction in
            try transaction.execute("""
                INSERT INTO notes (id, owner_id, title, pinned, updated_at)
                VALUES ('n1', 'u1', 'Note', 0, '2024-01-01T00:00:00.000000Z')
                """)
            try transaction.execute(
                "INSERT INTO _synchro_row_versions (table_name, record_id, server_version) "
                    + "VALUES ('notes', 'n1', 'v3')")
        }
        #expect(try fixture.store.execute("DELETE FROM notes WHERE id = 'n1'") == 0)
        let rows = try fixture.store.query("SELECT deleted_at FROM notes WHERE id = 'n1'")
        let deletedAt = try #require(rows.first?["deleted_at"]?.textValue)
        #expect(WireFormats.isTimestamp(deletedAt))
        let ledger = try fixture.store.ledger()
        #expect(ledger.count == 1)
        #expect(ledger.first?.operation == .delete)
        #expect(ledger.first?.baseVersion == "v3")
        #expect(ledger.first?.fields.isEmpty == true)
        // Deleting again changes deleted_at but is no new transition, so nothing more is captured.
        try fixture.store.execute("DELETE FROM notes WHERE id = 'n1'")
        #expect(try fixture.store.ledger().count == 1)
    }

    @Test("an INSERT into a synced table made by a trigger on a local table aborts and changes nothing")
    func insertWithoutContextAborts() throws {
        let fixture = try StoreFixture()
        try fixture.store.execute("CREATE TABLE inbox (id TEXT PRIMARY KEY)")
        try fixture.store.execute("""
            CREATE TRIGGER inbox_to_tasks AFTER INSERT ON inbox BEGIN
                INSERT INTO tasks (id, owner_id, title, done, position) VALUES (NEW.id, 'u1', 'From inbox', 0, 0);
            END
            """)
        let before = try fixture.inspect(databaseFingerprint)
        let error = try #require(throws: ApplicationSQLError.self) {
            try fixture.store.execute("INSERT INTO inbox (id) VALUES ('x')")
        }
        #expect(error == .insertWithoutCaptureContext)
        #expect(try fixture.inspect(databaseFingerprint) == before)
    }

    @Test("an UPDATE made by a trigger on a local table is captured like any ordinary UPDATE")
    func triggerMadeUpdateIsCaptured() throws {
        let fixture = try StoreFixture()
        try Self.seedRow(fixture, id: "t1", version: "v1")
        try fixture.store.execute("CREATE TABLE renames (id TEXT, title TEXT)")
        try fixture.store.execute("""
            CREATE TRIGGER apply_rename AFTER INSERT ON renames BEGIN
                UPDATE tasks SET title = NEW.title WHERE id = NEW.id;
            END
            """)
        try fixture.store.execute("INSERT INTO renames VALUES ('t1', 'Via trigger')")
        let entry = try #require(try fixture.store.ledger().first)
        #expect(entry.operation == .update)
        #expect(entry.fields.map(\.fieldID) == ["fld_task_title"])
    }

    @Test("changing a synced row's primary key aborts")
    func primaryKeyChange() throws {
        let fixture = try StoreFixture()
        try Self.seedRow(fixture, id: "t1", version: "v1")
        let error = try #require(throws: ApplicationSQLError.self) {
            try fixture.store.execute("UPDATE tasks SET id = 't9' WHERE id = 't1'")
        }
        #expect(error == .primaryKeyChange)
        #expect(try fixture.store.ledger().isEmpty)
    }

    @Test("a value whose storage class does not fit its portable type aborts the capture")
    func storageType() throws {
        let fixture = try StoreFixture()
        let error = try #require(throws: ApplicationSQLError.self) {
            try fixture.store.execute(Self.taskInsert, ["t1", "u1", "T", 0, "not a number"])
        }
        #expect(error == .captureStorageTypeInvalid)
        #expect(try fixture.store.query("SELECT id FROM tasks").isEmpty)
    }

    @Test("a second write to a row depends on the first and has no base version until it resolves")
    func dependencyChain() throws {
        let fixture = try StoreFixture()
        try Self.seedRow(fixture, id: "t1", version: "v1")
        try fixture.store.execute("UPDATE tasks SET title = 'One' WHERE id = 't1'")
        try fixture.store.execute("UPDATE tasks SET title = 'Two' WHERE id = 't1'")
        let ledger = try fixture.store.ledger()
        #expect(ledger.count == 2)
        #expect(ledger[1].dependencyMutationID == ledger[0].mutationID)
        #expect(ledger[0].baseVersion == "v1")
        #expect(ledger[1].baseVersion == nil)
        #expect(MutationPresence.violation(of: ledger[1]) == .baseVersionMissing)
    }

    @Test("an authored mask restricts UPDATE capture to its columns and suppresses other synced tables")
    func authoredMask() throws {
        let fixture = try StoreFixture()
        try Self.seedRow(fixture, id: "t1", version: "v1")
        try fixture.store.serverApply { transaction in
            try transaction.execute("INSERT INTO categories (id, name) VALUES (1, 'A')")
        }
        try fixture.store.authoredWriteTransaction(table: "TASKS", operation: .update, columns: ["Title"]) { tx in
            try tx.execute("UPDATE tasks SET title = 'Masked', position = 5 WHERE id = 't1'")
            try tx.execute("UPDATE categories SET name = 'B' WHERE id = 1")
        }
        let ledger = try fixture.store.ledger()
        #expect(ledger.count == 1)
        #expect(ledger.first?.tableName == "tasks")
        #expect(ledger.first?.fields.map(\.fieldID) == ["fld_task_title"])
        #expect(try fixture.inspect { try $0.scalar("SELECT count(*) FROM _synchro_capture_context") } == .integer(0))
    }

    @Test("an authored mask with an empty column list captures no update; a soft delete under a mask is one delete")
    func emptyMaskAndMaskedSoftDelete() throws {
        let fixture = try StoreFixture()
        try Self.seedRow(fixture, id: "t1", version: "v1")
        try fixture.store.serverApply { transaction in
            try transaction.execute("""
                INSERT INTO notes (id, owner_id, title, pinned, updated_at)
                VALUES ('n1', 'u1', 'Note', 0, '2024-01-01T00:00:00.000000Z')
                """)
            try transaction.execute(
                "INSERT INTO _synchro_row_versions (table_name, record_id, server_version) VALUES ('notes', 'n1', 'v3')")
        }
        try fixture.store.authoredWriteTransaction(table: "tasks", operation: .update, columns: []) { tx in
            try tx.execute("UPDATE tasks SET title = 'Unmasked' WHERE id = 't1'")
        }
        #expect(try fixture.store.ledger().isEmpty)
        #expect(try fixture.store.query("SELECT title FROM tasks WHERE id = 't1'").first?["title"] == .text("Unmasked"))

        try fixture.store.authoredWriteTransaction(table: "notes", operation: .update, columns: ["title"]) { tx in
            try tx.execute("DELETE FROM notes WHERE id = 'n1'")
        }
        let ledger = try fixture.store.ledger()
        #expect(ledger.map(\.operation) == [.delete])
        #expect(ledger.first?.fields.isEmpty == true)
        #expect(ledger.first?.baseVersion == "v3")
    }

    @Test("server-apply writes are not captured and leave sync_lock at '0'")
    func serverApplyIsNotCaptured() throws {
        let fixture = try StoreFixture()
        try fixture.store.serverApply { transaction in
            try transaction.execute(taskInsertSQL("s", title: "S", position: 0))
            #expect(try transaction.meta(.syncLock) == "1")
            try transaction.execute("UPDATE tasks SET title = 'S2' WHERE id = 's'")
            try transaction.execute("DELETE FROM tasks WHERE id = 's'")
        }
        #expect(try fixture.store.ledger().isEmpty)
        #expect(try fixture.store.meta(.syncLock) == "0")
    }

    @Test("a failed server-apply transaction rolls back its rows and the capture switch")
    func serverApplyRollsBack() throws {
        struct Stop: Error {}
        let fixture = try StoreFixture()
        #expect(throws: Stop.self) {
            try fixture.store.serverApply { transaction in
                try transaction.execute("INSERT INTO categories (id, name) VALUES (1, 'A')")
                throw Stop()
            }
        }
        #expect(try fixture.store.meta(.syncLock) == "0")
        #expect(try fixture.store.query("SELECT * FROM categories").isEmpty)
    }

    @Test("capture refuses to record intent when the active schema has no archive row")
    func schemaGuard() throws {
        let fixture = try StoreFixture()
        try fixture.inspect { try $0.run("DELETE FROM _synchro_schema_archive") }
        let error = try #require(throws: ApplicationSQLError.self) {
            try fixture.store.execute(Self.taskInsert, ["t1", "u1", "T", 0, 1])
        }
        #expect(error == .captureRequiresVerifiedSchema)
    }

    @Test("stored values render as wire values by portable type", arguments: [
        ("boolean", StoredFieldValue.Kind.boolean, SQLiteValue.integer(1), JSONValue.bool(true)),
        ("int", .integer, .integer(-5), .number(JSONNumber(-5))),
        ("int64", .integer, .integer(9_007_199_254_740_993), .string("9007199254740993")),
        ("float", .real, .real(1.5), .number(JSONNumber(1.5)!)),
        ("decimal", .text, .text("12.50"), .string("12.50")),
        ("bytes", .blob, .blob([0, 255]), .string("AP8")),
        ("string", .null, .null, .null),
    ])
    func wireValues(type: String, kind: StoredFieldValue.Kind, stored: SQLiteValue, wire: JSONValue) {
        let value = StoredFieldValue(
            fieldID: "f", logicalType: type, kind: kind, integer: stored.integerValue, real: stored.realValue,
            text: stored.textValue, blob: stored.blobValue)
        #expect(value.wireValue() == wire)
    }

    @Test("stored values in an inconsistent shape have no wire value", arguments: [
        StoredFieldValue(fieldID: "f", logicalType: "boolean", kind: .boolean, integer: 2),
        StoredFieldValue(fieldID: "f", logicalType: "int", kind: .integer, integer: 1, text: "1"),
        StoredFieldValue(fieldID: "f", logicalType: "float", kind: .real, real: .infinity),
        StoredFieldValue(fieldID: "f", logicalType: "string", kind: .integer, integer: 1),
        StoredFieldValue(fieldID: "f", logicalType: "string", kind: .null, text: "x"),
    ])
    func invalidShapes(value: StoredFieldValue) {
        #expect(value.wireValue() == nil)
    }
}
