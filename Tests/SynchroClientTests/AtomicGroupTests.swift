import Foundation
import SQLiteKit
import SynchroStore
import _SeedkitTestSupport
import SynchroClient
import SynchroProtocol
import Testing

@Suite("Atomic write groups")
struct AtomicGroupTests {
    static func insertTask(_ id: String, title: String = "T") -> (String, [SQLiteValue]) {
        ("INSERT INTO tasks (id, owner_id, title, done, position) VALUES (?, 'u', ?, 0, 1)", [.text(id), .text(title)])
    }

    static func fixture() throws -> StoreFixture {
        let fixture = try StoreFixture()
        try CaptureTests.seedRow(fixture, id: "t1", version: "v1")
        return fixture
    }

    /// Runs an atomic group that inserts `count` tasks with titles of `titleLength` characters, then `extra`.
    static func group(
        _ store: ClientStore, count: Int, titleLength: Int = 1,
        extra: (ApplicationTransaction) throws -> Void = { _ in }
    ) throws {
        try store.atomicWriteTransaction { transaction in
            for index in 0..<count {
                let (sql, arguments) = insertTask("bulk-\(index)", title: String(repeating: "a", count: titleLength))
                try transaction.execute(sql, arguments)
            }
            try extra(transaction)
        }
    }

    @Test("every mutation of a group carries one group ID; the meta key exists only while the group runs")
    func groupID() throws {
        let fixture = try Self.fixture()
        let during = try fixture.store.atomicWriteTransaction { transaction in
            let (sql, arguments) = Self.insertTask("a")
            try transaction.execute(sql, arguments)
            try transaction.execute("UPDATE tasks SET title = 'x' WHERE id = 't1'")
            return try transaction.query("SELECT value FROM _synchro_meta WHERE key = 'atomic_group_id'").first?[0]
        }
        let groupID = try #require(during?.textValue)
        #expect(WireFormats.isCanonicalUUID(groupID))
        let ledger = try fixture.store.ledger()
        #expect(ledger.count == 2)
        #expect(ledger.allSatisfy { $0.atomicGroupID == groupID })
        #expect(try fixture.store.meta(.atomicGroupID) == nil)
    }

    @Test("a group that captures nothing commits as an ordinary write")
    func emptyGroup() throws {
        let fixture = try Self.fixture()
        try fixture.store.execute("CREATE TABLE drafts (body TEXT)")
        try fixture.store.atomicWriteTransaction { try $0.execute("INSERT INTO drafts VALUES ('local')") }
        #expect(try fixture.store.query("SELECT body FROM drafts").count == 1)
        #expect(try fixture.store.meta(.atomicGroupID) == nil)
    }

    @Test("rule 1: a delete of a row followed by a later write to it rolls the whole group back")
    func deleteFollowedByWrite() throws {
        let fixture = try Self.fixture()
        let before = try fixture.inspect(databaseFingerprint)
        let error = try #require(throws: AtomicGroupInvalid.self) {
            try fixture.store.atomicWriteTransaction { transaction in
                try transaction.execute("DELETE FROM tasks WHERE id = 't1'")
                let (sql, arguments) = Self.insertTask("t1")
                try transaction.execute(sql, arguments)
            }
        }
        #expect(error.reason == .deleteFollowedByWrite)
        #expect(try fixture.inspect(databaseFingerprint) == before)
    }

    @Test("rule 2: chains inside the group are normalized before they are counted and measured")
    func groupNormalization() throws {
        let fixture = try Self.fixture()
        try fixture.store.atomicWriteTransaction { transaction in
            try transaction.execute("UPDATE tasks SET title = 'one' WHERE id = 't1'")
            try transaction.execute("UPDATE tasks SET position = 7 WHERE id = 't1'")
            let (sql, arguments) = Self.insertTask("gone")
            try transaction.execute(sql, arguments)
            try transaction.execute("DELETE FROM tasks WHERE id = 'gone'")
        }
        let ledger = try fixture.store.ledger()
        #expect(ledger.map(\.state) == [
            .supersededBeforeSend, .supersededBeforeSend, .cancelledBeforeSend, .cancelledBeforeSend, .unsealed,
        ])
        let merged = try #require(ledger.last)
        #expect(merged.sourceKind == .normalized)
        #expect(merged.operation == .update)
        #expect(merged.baseVersion == "v1")
        #expect(merged.atomicGroupID == ledger[0].atomicGroupID)
        #expect(merged.fields.map(\.fieldID) == ["fld_task_position", "fld_task_title"])
        #expect(ledger[0].normalizedMutationID == merged.mutationID)
        #expect(ledger[2].normalizedMutationID == ledger[3].normalizedMutationID)
    }

    @Test("rule 3: more than 1000 normalized mutations roll the group back")
    func tooManyMutations() throws {
        let fixture = try Self.fixture()
        let error = try #require(throws: AtomicGroupInvalid.self) { try Self.group(fixture.store, count: 1001) }
        #expect(error.reason == .tooManyMutations)
        #expect(try fixture.store.ledger().isEmpty)
        #expect(try fixture.store.query("SELECT id FROM tasks").count == 1)
        try Self.group(fixture.store, count: 1000)
        #expect(try fixture.store.ledger().count == 1000)
    }

    @Test("rule 4: a mutation over 65,536 canonical octets rolls the group back")
    func mutationTooLarge() throws {
        let fixture = try Self.fixture()
        let error = try #require(throws: AtomicGroupInvalid.self) {
            try Self.group(fixture.store, count: 1, titleLength: 66_000)
        }
        #expect(error.reason == .mutationTooLarge)
        #expect(try fixture.store.ledger().isEmpty)
    }

    @Test("rule 4: a mutation with more than 256 authored columns rolls the group back; 256 commit")
    func tooManyColumns() throws {
        // The tasks table widened by `extraFields` writable fields; an insert authors its 4 writable demo columns
        // (the key is not authored) and every extra one: 4 + 253 = 257 is over the bound, 4 + 252 = 256 fits.
        func fixture(extraFields: Int) throws -> StoreFixture {
            let url = RepositoryLayout.root.appendingPathComponent("seeds/demo/manifest.json")
            var edit = ManifestEdit(json: try StrictJSONParser().parse(Array(try Data(contentsOf: url))))
            for index in 0..<extraFields { edit.addField("tbl_tasks", "fld_extra_\(index)", type: "string") }
            let body = (edit.json.objectValue?.members ?? []).filter { $0.key != "schema_hash" }
            let hash = try SchemaManifest.computeHash(json: .object(JSONObject(body)))
            let manifest = JSONValue.object(JSONObject(body + [JSONMember("schema_hash", .string(hash))]))
            let fixture = try StoreFixture(applyDemo: false)
            try fixture.store.applySchema(try ClientManifest(bytes: try CanonicalJSON.encode(manifest)))
            return fixture
        }
        func insertWide(_ store: ClientStore, extraFields: Int) throws {
            let extras = (0..<extraFields).map { "fld_extra_\($0)" }
            let columns = ["id", "owner_id", "title", "done", "position"] + extras
            let values: [SQLiteValue] = [.text("wide"), .text("u"), .text("T"), .integer(0), .integer(1)]
                + extras.map { _ in .text("x") }
            try store.atomicWriteTransaction { transaction in
                try transaction.execute(
                    "INSERT INTO tasks (\(columns.joined(separator: ", "))) VALUES "
                        + "(\(Array(repeating: "?", count: columns.count).joined(separator: ", ")))", values)
            }
        }
        let wide = try fixture(extraFields: 253)
        let error = try #require(throws: AtomicGroupInvalid.self) { try insertWide(wide.store, extraFields: 253) }
        #expect(error.reason == .mutationTooLarge)
        #expect(try wide.store.ledger().isEmpty)
        #expect(try wide.store.query("SELECT count(*) FROM tasks").first?[0] == .integer(0))

        let widest = try fixture(extraFields: 252)
        try insertWide(widest.store, extraFields: 252)
        #expect(try widest.store.ledger().count == 1)
    }

    @Test("rule 5: a worst-case request over 1,048,576 octets rolls the group back")
    func requestTooLarge() throws {
        let fixture = try Self.fixture()
        let error = try #require(throws: AtomicGroupInvalid.self) {
            try Self.group(fixture.store, count: 17, titleLength: 63_000)
        }
        #expect(error.reason == .requestTooLarge)
        #expect(try fixture.store.ledger().isEmpty)
        try Self.group(fixture.store, count: 16, titleLength: 63_000)
        #expect(try fixture.store.ledger().count == 16)
    }

    @Test("the rules apply in order: the first failing rule names the reason", arguments: [
        // A delete followed by a write and too many mutations: rule 1 wins.
        (1001, 1, true, AtomicGroupInvalidReason.deleteFollowedByWrite),
        // Too many mutations, one of them too large: rule 3 wins.
        (1001, 66_000, false, .tooManyMutations),
        // Too large and, with it, a request over the limit: rule 4 wins.
        (17, 66_000, false, .mutationTooLarge),
    ])
    func order(count: Int, titleLength: Int, deleteThenWrite: Bool, reason: AtomicGroupInvalidReason) throws {
        let fixture = try Self.fixture()
        let error = try #require(throws: AtomicGroupInvalid.self) {
            try fixture.store.atomicWriteTransaction { transaction in
                if deleteThenWrite {
                    try transaction.execute("DELETE FROM tasks WHERE id = 't1'")
                    try transaction.execute(taskInsertSQL("t1", title: "x", position: 1))
                }
                for index in 0..<count {
                    let title = String(repeating: "b", count: index == 0 ? titleLength : min(titleLength, 63_000))
                    let (sql, arguments) = Self.insertTask("o-\(index)", title: title)
                    try transaction.execute(sql, arguments)
                }
            }
        }
        #expect(error.reason == reason)
        #expect(try fixture.store.ledger().isEmpty)
    }

    @Test("an update whose base is not known yet is measured with the 64-octet placeholder and still fits")
    func unknownBaseIsMeasured() throws {
        let fixture = try Self.fixture()
        try fixture.store.execute("UPDATE tasks SET title = 'first' WHERE id = 't1'")
        try fixture.store.atomicWriteTransaction { transaction in
            try transaction.execute("UPDATE tasks SET title = 'second' WHERE id = 't1'")
        }
        let ledger = try fixture.store.ledger()
        #expect(ledger.count == 2)
        #expect(ledger[1].baseVersion == nil)
        #expect(ledger[1].dependencyMutationID == ledger[0].mutationID)
        #expect(ledger[1].atomicGroupID != nil)
    }
}
