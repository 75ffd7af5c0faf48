import SQLiteKit
@testable import SynchroServer
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// The scope digest input a SQLite store keeps as packed chunks (``MembershipChunks``): after every kind of write the
/// chunks hold exactly `membership`'s live members and give the digest a from-scratch pass over `membership` gives;
/// a chunk that does not add up is not used.
@Suite("Scope digest chunks of the SQLite store", .serialized)
struct MembershipChunksTests {
    /// The scopes of the store with at least one live member.
    static func scopes(_ server: RunningServer) throws -> [String] {
        try server.engine.rowsForTesting("SELECT scope_id FROM scope_cardinality WHERE live > 0 ORDER BY scope_id")
            .map { try #require($0[0].textValue) }
    }

    /// Checks every scope: no dirty range is left after materializing, each chunk's octets are its range's live
    /// members packed, chunks stay within the size bounds, and the chunked digest equals the pass over membership.
    static func expectConsistent(_ server: RunningServer, _ label: String) throws {
        #expect(try server.engine.rowsForTesting("SELECT count(*) FROM membership_chunk_dirty")[0][0].integerValue == 0,
                "\(label)")
        for scope in try scopes(server) {
            let chunks = try server.engine.rowsForTesting(
                "SELECT lower, members, octets FROM membership_chunks WHERE scope_id = ? ORDER BY lower", [.text(scope)])
            var packed: [UInt8] = []
            for member in try server.engine.rowsForTesting("""
                SELECT identity, row_digest FROM membership WHERE scope_id = ? AND row_digest IS NOT NULL
                ORDER BY identity
                """, [.text(scope)]) {
                let identity = try #require(member[0].blobValue)
                withUnsafeBytes(of: UInt64(identity.count).bigEndian) { packed.append(contentsOf: $0) }
                packed += identity + (try #require(member[1].blobValue))
            }
            #expect(chunks.first?[0].blobValue == [], "\(label): \(scope) starts at the empty identity")
            #expect(chunks.flatMap { $0[2].blobValue ?? [] } == packed, "\(label): \(scope)")
            for chunk in chunks {
                let members = try #require(chunk[1].integerValue)
                #expect(members > 0 && members <= Int64(MembershipChunks.maximumMembers), "\(label): \(scope)")
            }
            let passes = try server.engine.scopeDigestPassesForTesting(scope: scope)
            #expect(passes.chunks == passes.membership, "\(label): \(scope)")
        }
    }

    static func category(_ id: Int, _ name: String) -> JSONValue {
        ScopeCardinalityTests.category(id, name)
    }

    @Test("chunks follow inserts, updates, tombstones, fences and moves, and equal a from-scratch pass")
    func chunksFollowWrites() throws {
        let server = try RunningServer(rows: 40, store: .sqlite)
        try Self.expectConsistent(server, "initial load")
        let alice = try WireClient.connect(server).rebuild(scope: "user:alice", limit: 1000).records
        let note = try #require(alice.first { $0["table"]?.stringValue == "tbl_notes" })
        let otherNote = try #require(alice.last { $0["table"]?.stringValue == "tbl_notes" })
        let task = try #require(alice.first { $0["table"]?.stringValue == "tbl_tasks" })

        func step(_ label: String, _ write: () throws -> Void) throws {
            try write()
            server.engine.materialize()
            try Self.expectConsistent(server, label)
        }
        try step("a new category") {
            try server.engine.operatorWrite(table: "tbl_categories", pk: .number(JSONNumber(900)), row: Self.category(900, "New"))
        }
        try step("an update of the first identity") {
            try server.engine.operatorWrite(table: "tbl_categories", pk: .number(JSONNumber(1)), row: Self.category(1, "Renamed"))
        }
        try step("a tombstone") {
            try server.engine.operatorDelete(table: "tbl_notes", pk: try #require(note["pk"]?.objectValue?["fld_note_id"]))
        }
        try step("a fence") {
            try server.engine.operatorDelete(
                table: "tbl_tasks", pk: try #require(task["pk"]?.objectValue?["fld_task_id"]))
        }
        try step("a move to another user") {
            let moved = try #require(otherNote["row"]?.objectValue).members.map {
                $0.key == "fld_note_owner" ? JSONMember($0.key, .string("bob")) : $0
            }
            try server.engine.operatorWrite(
                table: "tbl_notes", pk: try #require(otherNote["pk"]?.objectValue?["fld_note_id"]),
                row: .object(JSONObject(moved)))
        }
    }

    @Test("a range that grows past the maximum is split and one that shrinks is merged; a scope emptied has no chunk")
    func splitsAndMerges() throws {
        let server = try RunningServer(rows: 1500, store: .sqlite)
        try Self.expectConsistent(server, "initial load")
        let before = try server.engine.rowsForTesting(
            "SELECT count(*) FROM membership_chunks WHERE scope_id = 'catalog'")[0][0].integerValue ?? 0
        #expect(before >= 3)
        // New categories all sort into one range (they share the table's identity prefix): it must split.
        let added = 1300
        for id in 10_000..<(10_000 + added) {
            try server.engine.operatorWrite(
                table: "tbl_categories", pk: .number(JSONNumber(Int64(id))), row: Self.category(id, "c\(id)"))
        }
        server.engine.materialize()
        try Self.expectConsistent(server, "after inserts")
        let grown = try server.engine.rowsForTesting(
            "SELECT count(*) FROM membership_chunks WHERE scope_id = 'catalog'")[0][0].integerValue ?? 0
        #expect(grown > before)
        for id in 10_000..<(10_000 + added) {
            try server.engine.operatorDelete(table: "tbl_categories", pk: .number(JSONNumber(Int64(id))))
        }
        server.engine.materialize()
        try Self.expectConsistent(server, "after deletes")
        let shrunk = try server.engine.rowsForTesting(
            "SELECT count(*) FROM membership_chunks WHERE scope_id = 'catalog'")[0][0].integerValue ?? 0
        #expect(shrunk < grown)
    }

    @Test("a range changed behind the materializer is read from membership until it is packed again")
    func dirtyRangeReadsMembership() throws {
        let server = try RunningServer(rows: 1500, store: .sqlite)
        let member = try #require(try server.engine.rowsForTesting(
            "SELECT identity FROM membership WHERE scope_id = 'catalog' AND row_digest IS NOT NULL ORDER BY identity LIMIT 1 OFFSET 700"
        ).first?[0])
        #expect(try server.engine.executeForTesting(
            "UPDATE membership SET row_digest = zeroblob(32) WHERE scope_id = 'catalog' AND identity = ?", [member]) == 1)
        #expect(try server.engine.rowsForTesting("SELECT count(*) FROM membership_chunk_dirty")[0][0].integerValue == 1)
        let passes = try server.engine.scopeDigestPassesForTesting(scope: "catalog")
        #expect(passes.chunks == passes.membership)
        server.engine.materialize()
        // Nothing was captured, so the batch did not run: the mark stays until a materializer batch packs it.
        try server.engine.operatorWrite(table: "tbl_categories", pk: .number(JSONNumber(1)), row: Self.category(1, "X"))
        server.engine.materialize()
        try Self.expectConsistent(server, "after the next batch")
    }

    /// Damage to one stored chunk that the chunked pass detects.
    enum Damage: CaseIterable {
        /// The last entry loses its final octet (its digest is no longer 32 octets).
        case truncated
        /// The first two entries change places.
        case swapped
        /// The chunk's member count is one more than it holds.
        case count
        /// A middle chunk is gone: its members are missing from the range that now covers it.
        case missing
        /// A chunk's octets hold an entry of the next chunk's range too.
        case outOfRange
    }

    @Test("a damaged or missing chunk is not used: the checksum is the one membership gives", arguments: Damage.allCases)
    func damagedChunk(damage: Damage) throws {
        let server = try RunningServer(rows: 1500, store: .sqlite)
        let synced = try PullEndpointTests.synced(server)
        let chunks = try server.engine.rowsForTesting(
            "SELECT lower, octets FROM membership_chunks WHERE scope_id = 'catalog' ORDER BY lower")
        #expect(chunks.count >= 3)
        let lower = chunks[1][0]
        let octets = try #require(chunks[1][1].blobValue)
        func entries(_ octets: [UInt8]) -> [[UInt8]] {
            var result: [[UInt8]] = []
            var at = 0
            while at < octets.count {
                let length = octets[at..<(at + 8)].reduce(0) { $0 << 8 | Int($1) }
                result.append(Array(octets[at..<(at + 8 + length + 32)]))
                at += 8 + length + 32
            }
            return result
        }
        switch damage {
        case .truncated:
            try server.engine.executeForTesting(
                "UPDATE membership_chunks SET octets = ? WHERE scope_id = 'catalog' AND lower = ?",
                [.blob(Array(octets.dropLast())), lower])
        case .swapped:
            var list = entries(octets)
            list.swapAt(0, 1)
            try server.engine.executeForTesting(
                "UPDATE membership_chunks SET octets = ? WHERE scope_id = 'catalog' AND lower = ?",
                [.blob(list.flatMap { $0 }), lower])
        case .count:
            try server.engine.executeForTesting(
                "UPDATE membership_chunks SET members = members + 1 WHERE scope_id = 'catalog' AND lower = ?", [lower])
        case .missing:
            try server.engine.executeForTesting(
                "DELETE FROM membership_chunks WHERE scope_id = 'catalog' AND lower = ?", [lower])
        case .outOfRange:
            let following = try #require(chunks[2][1].blobValue)
            let next = try #require(entries(following).first)
            try server.engine.executeForTesting(
                "UPDATE membership_chunks SET octets = ?, members = members + 1 WHERE scope_id = 'catalog' AND lower = ?",
                [.blob(octets + next), lower])
            try server.engine.executeForTesting(
                "UPDATE membership_chunks SET octets = substr(octets, ?), members = members - 1 WHERE scope_id = 'catalog' AND lower = ?",
                [.integer(Int64(next.count + 1)), chunks[2][0]])
        }
        let passes = try server.engine.scopeDigestPassesForTesting(scope: "catalog")
        #expect(passes.chunks == nil)

        // The terminal checksum of a pull after a change is still the digest of the rows (membership's pass).
        let records = try synced.client.rebuild(scope: "catalog", limit: 1000).records
        try server.engine.operatorWrite(table: "tbl_categories", pk: .number(JSONNumber(1)), row: Self.category(1, "D"))
        // The change repacks the first range only; the damaged one is still damaged (or, when missing, repaired).
        let (changes, last) = try synced.client.pullToTerminal(from: synced.cursors, limit: 1000)
        #expect(DigestCheck.checksum(last, scope: "catalog")
            == (try DigestCheck.scopeDigest(
                ScopeCardinalityTests.applied(changes, to: records), scope: "catalog", manifest: synced.client.manifest)))
    }
}
