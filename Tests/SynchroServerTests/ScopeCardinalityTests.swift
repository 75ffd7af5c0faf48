import SQLiteKit
@testable import SynchroServer
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// The terminal checksum's input as the server keeps it (``ScopeCardinality``, ``ScopeDigestCache``): each scope's
/// live count moves with membership in the same transaction, on SQLite and PostgreSQL; a wrong kept count fails the
/// pull instead of giving a checksum; stored identities and digests are hashed as stored, so a forged one is caught
/// where the protocol puts the check — the client recomputing the digest from its rows.
@Suite("Kept scope cardinality and the terminal checksum pass", .serialized)
struct ScopeCardinalityTests {
    /// Each scope's kept count, scopes without a live member left out.
    static func kept(_ server: RunningServer) throws -> [String: Int64] {
        try counts(server, "SELECT scope_id, live FROM scope_cardinality")
    }

    /// Each scope's live members counted from membership itself.
    static func counted(_ server: RunningServer) throws -> [String: Int64] {
        try counts(server, "SELECT scope_id, count(*) FROM membership WHERE row_digest IS NOT NULL GROUP BY scope_id")
    }

    private static func counts(_ server: RunningServer, _ sql: String) throws -> [String: Int64] {
        var counts: [String: Int64] = [:]
        for row in try server.engine.rowsForTesting(sql) {
            let scope: String = try #require(row[0].textValue)
            let count: Int64 = try #require(row[1].integerValue)
            if count != 0 { counts[scope] = count }
        }
        return counts
    }

    static func category(_ id: Int, _ name: String) -> JSONValue {
        object(["fld_category_id": .number(JSONNumber(Int64(id))), "fld_category_name": .string(name)])
    }

    @Test(
        "the kept count moves with inserts, tombstones, fences and moves between scopes, and equals a recount",
        arguments: [RunningServer.Store.sqlite, .postgres])
    func countFollowsMembership(store: RunningServer.Store) throws {
        let server = try RunningServer(rows: 40, store: store)
        var expected = try Self.kept(server)
        #expect(expected == (try Self.counted(server)))
        #expect((expected["catalog"] ?? 0) > 0 && (expected["user:alice"] ?? 0) > 0)
        let alice = try WireClient.connect(server).rebuild(scope: "user:alice", limit: 1000).records
        let note = try #require(alice.first { $0["table"]?.stringValue == "tbl_notes" })
        let noteKey = try #require(note["pk"]?.objectValue?["fld_note_id"])
        let otherNote = try #require(alice.last { $0["table"]?.stringValue == "tbl_notes" })
        let task = try #require(alice.first { $0["table"]?.stringValue == "tbl_tasks" })

        func step(_ label: String, _ deltas: [String: Int64], _ write: () throws -> Void) throws {
            try write()
            server.engine.materialize()
            for (scope, delta) in deltas { expected[scope, default: 0] += delta }
            #expect(try Self.kept(server) == expected, "\(label)")
            #expect(try Self.counted(server) == expected, "\(label)")
        }
        try step("a new category", ["catalog": 1]) {
            try server.engine.operatorWrite(table: "tbl_categories", pk: .number(JSONNumber(900)), row: Self.category(900, "New"))
        }
        try step("an update", [:]) {
            try server.engine.operatorWrite(table: "tbl_categories", pk: .number(JSONNumber(1)), row: Self.category(1, "Renamed"))
        }
        try step("a tombstone", ["user:alice": -1]) {
            try server.engine.operatorDelete(table: "tbl_notes", pk: noteKey)
        }
        try step("a fence", ["user:alice": -1]) {
            try server.engine.operatorDelete(
                table: "tbl_tasks", pk: try #require(task["pk"]?.objectValue?["fld_task_id"]))
        }
        try step("a move to another user", ["user:alice": -1, "user:bob": 1]) {
            let moved = try #require(otherNote["row"]?.objectValue).members.map {
                $0.key == "fld_note_owner" ? JSONMember($0.key, .string("bob")) : $0
            }
            try server.engine.operatorWrite(
                table: "tbl_notes", pk: try #require(otherNote["pk"]?.objectValue?["fld_note_id"]),
                row: .object(JSONObject(moved)))
        }
    }

    @Test("a kept count that differs from membership fails the terminal pull as an integrity failure", arguments: [-1, 1])
    func forgedCount(offset: Int) throws {
        let server = try RunningServer(rows: 30)
        let synced = try PullEndpointTests.synced(server)
        #expect(try server.engine.executeForTesting(
            "UPDATE scope_cardinality SET live = live + ? WHERE scope_id = 'catalog'", [.integer(Int64(offset))]) == 1)
        // A catalog change: the digest cached at the rebuild's boundary no longer answers.
        try server.engine.operatorWrite(table: "tbl_categories", pk: .number(JSONNumber(1)), row: Self.category(1, "A"))
        server.engine.materialize()
        let cursors = synced.cursors.sorted { $0.key < $1.key }.map { ($0.key, Optional($0.value)) }
        let failed = try synced.client.pull(cursors)
        #expect(failed.status == 500)
        #expect(failed.errorCode == "sync_integrity_failure")

        #expect(try server.engine.executeForTesting(
            "UPDATE scope_cardinality SET live = live - ? WHERE scope_id = 'catalog'", [.integer(Int64(offset))]) == 1)
        let (_, last) = try synced.client.pullToTerminal(from: synced.cursors, limit: 1000)
        let rebuilt = try synced.client.rebuild(scope: "catalog", limit: 1000)
        #expect(DigestCheck.checksum(last, scope: "catalog")
            == (try DigestCheck.scopeDigest(rebuilt.records, scope: "catalog", manifest: synced.client.manifest)))
    }

    /// What a client holding `records` holds after applying the upserts in `changes`.
    static func applied(_ changes: [JSONObject], to records: [JSONObject]) -> [JSONObject] {
        var rows = records
        for change in changes where change["op"] == .string("upsert") {
            let record = JSONObject(change.members.filter { $0.key != "scope" && $0.key != "op" })
            if let index = rows.firstIndex(where: { $0["table"] == change["table"] && $0["pk"] == change["pk"] }) {
                rows[index] = record
            } else {
                rows.append(record)
            }
        }
        return rows
    }

    /// What a store altered behind the server holds for one member.
    enum Forgery: CaseIterable {
        /// The identity gains a trailing octet: no longer a structurally valid identity, still in order.
        case identity
        /// The digest's first octet changes.
        case digest

        func apply(to member: [SQLiteValue]) -> [SQLiteValue] {
            switch self {
            case .identity: [.blob((member[0].blobValue ?? []) + [0]), member[1]]
            case .digest: [member[0], .blob((member[1].blobValue ?? []).enumerated().map { $0 == 0 ? ~$1 : $1 })]
            }
        }
    }

    @Test(
        "a stored identity or digest altered behind the server is hashed as stored: the client's recomputation differs",
        arguments: Forgery.allCases)
    func forgedMember(forgery: Forgery) throws {
        let server = try RunningServer(rows: 30)
        let synced = try PullEndpointTests.synced(server)
        let records = try synced.client.rebuild(scope: "catalog", limit: 1000).records
        // The last member in identity order is a product; the change below is to a category.
        let member = try #require(try server.engine.rowsForTesting(
            "SELECT identity, row_digest FROM membership WHERE scope_id = 'catalog' ORDER BY identity DESC LIMIT 1"
        ).first)
        let forged = forgery.apply(to: member)
        let update = "UPDATE membership SET identity = ?, row_digest = ? WHERE scope_id = 'catalog' AND identity = ?"
        #expect(try server.engine.executeForTesting(update, forged + [member[0]]) == 1)
        try server.engine.operatorWrite(table: "tbl_categories", pk: .number(JSONNumber(1)), row: Self.category(1, "B"))
        server.engine.materialize()

        let (changes, last) = try synced.client.pullToTerminal(from: synced.cursors, limit: 1000)
        let recomputed = try DigestCheck.scopeDigest(
            Self.applied(changes, to: records), scope: "catalog", manifest: synced.client.manifest)
        #expect(try #require(DigestCheck.checksum(last, scope: "catalog")) != recomputed)

        // With the member restored, the same comparison agrees: the difference was the forgery.
        #expect(try server.engine.executeForTesting(update, member + [forged[0]]) == 1)
        try server.engine.operatorWrite(table: "tbl_categories", pk: .number(JSONNumber(1)), row: Self.category(1, "C"))
        server.engine.materialize()
        let (again, restored) = try synced.client.pullToTerminal(from: synced.cursors, limit: 1000)
        #expect(DigestCheck.checksum(restored, scope: "catalog")
            == (try DigestCheck.scopeDigest(
                Self.applied(again, to: records), scope: "catalog", manifest: synced.client.manifest)))
    }
}
