import Foundation
import SQLiteKit
import SynchroClient
import SynchroProtocol
import Synchronization
import Testing
import _SeedkitTestSupport

@Suite("Sync against the reference server")
struct SyncTests {
    @Test("a fresh connect installs the server manifest, the generation and the assigned scopes without cursors")
    func freshConnect() throws {
        let fixture = try SyncFixture()
        let request = try ConnectExchange(context: fixture.context).request()
        #expect(request.schema == nil)
        #expect(request.clientGeneration == nil)
        try fixture.connect()
        let store = fixture.store
        #expect(Int64(try store.meta(.schemaVersion) ?? "") ?? 0 > 0)
        #expect(Int64(try store.meta(.clientGeneration) ?? "") ?? 0 > 0)
        #expect(try store.localSchema().map(\.tableName).sorted() == ["categories", "notes", "products", "tasks"])
        let scopes = try fixture.scopes()
        #expect(scopes.map(\.id) == ["catalog", "user:alice"])
        #expect(scopes.allSatisfy { $0.cursor == nil && $0.checksum == nil })

        // A second connect presents the installed schema and generation and gets `none`.
        let again = try ConnectExchange(context: fixture.context).request()
        #expect(again.schema != nil)
        #expect(again.clientGeneration != nil)
        try fixture.connect()
        #expect(try fixture.scopes().map(\.id) == ["catalog", "user:alice"])
    }

    @Test("rebuilding catalog and user:alice in several pages yields rows whose scope digests match the server")
    func rebuildScopes() throws {
        let fixture = try SyncFixture()
        try fixture.connectAndRebuild()
        let scopes = try fixture.scopes()
        #expect(scopes.allSatisfy { $0.cursor != nil && $0.checksum != nil })
        #expect(try fixture.count("SELECT count(*) FROM products") > fixture.pageLimit)
        #expect(try fixture.count("SELECT count(*) FROM notes") > 0)
        #expect(try fixture.count("SELECT count(*) FROM _synchro_rebuild_attempts") == 0)
        #expect(try fixture.count("SELECT count(*) FROM _synchro_pending_changes") == 0)
        #expect(try fixture.count("SELECT count(DISTINCT rebuild_id) FROM _synchro_rebuild_page_receipts") == 2)
        #expect(try fixture.count("SELECT count(*) FROM _synchro_rebuild_page_receipts") > 2)
        // The terminal pull's checksums are recomputed from the same local state and verify.
        let outcome = try PullApplier(context: fixture.context).pull()
        #expect(outcome.verifiedScopes == ["catalog", "user:alice"])
        #expect(outcome.rebuildRequired.isEmpty)
    }

    @Test("reopening the store between rebuild pages resumes with the same rebuild ID and cursor")
    func rebuildResumesAfterCrash() throws {
        let fixture = try SyncFixture()
        try fixture.connect()
        let first = try RebuildApplier(context: fixture.context).start(scope: "catalog")
        #expect(first.cursor == nil)
        #expect(try RebuildApplier(context: fixture.context).runPage(scope: "catalog") == false)
        let midway = try #require(try RebuildApplier(context: fixture.context).attempt(scope: "catalog"))
        #expect(midway.rebuildID == first.rebuildID)
        #expect(midway.cursor != nil)

        try fixture.storeFixture.reopen()
        let applier = RebuildApplier(context: fixture.context)
        let resumed = try applier.start(scope: "catalog")
        #expect(resumed == midway)
        try applier.rebuild(scope: "catalog")
        #expect(try applier.attempt(scope: "catalog") == nil)
        let catalog = try #require(try fixture.scopes().first { $0.id == "catalog" })
        #expect(catalog.cursor != nil && catalog.checksum != nil)
        #expect(try fixture.count(
            "SELECT count(DISTINCT rebuild_id) FROM _synchro_rebuild_page_receipts WHERE scope_id = 'catalog'") == 1)
    }

    @Test("a pull after an operator write applies the change and verifies every terminal checksum")
    func pullAfterOperatorWrite() throws {
        let fixture = try SyncFixture()
        try fixture.connectAndRebuild()
        let before = try fixture.scopes()
        _ = try fixture.server.engine.operatorWrite(
            table: "tbl_categories", pk: .number(JSONNumber(3)),
            row: .object(JSONObject([
                JSONMember("fld_category_id", .number(JSONNumber(3))),
                JSONMember("fld_category_name", .string("Kitchen")),
            ])))
        let outcome = try PullApplier(context: fixture.context).pull()
        #expect(outcome.verifiedScopes == ["catalog", "user:alice"])
        #expect(outcome.rebuildRequired.isEmpty)
        let name = try fixture.storeFixture.inspect { try $0.scalar("SELECT name FROM categories WHERE id = 3") }
        #expect(name?.textValue == "Kitchen")
        #expect(try fixture.count("SELECT count(*) FROM _synchro_pending_changes") == 0)
        let after = try fixture.scopes()
        #expect(after.first?.checksum != before.first?.checksum)
    }

    @Test("a corrupt terminal checksum makes only that scope rebuild-required")
    func corruptChecksum() throws {
        let fixture = try SyncFixture()
        try fixture.connectAndRebuild()
        try fixture.server.engine.inject(.corruptChecksum(scope: "catalog"))
        let outcome = try PullApplier(context: fixture.context).pull()
        #expect(outcome.rebuildRequired == ["catalog"])
        #expect(outcome.verifiedScopes == ["user:alice"])
        let scopes = try fixture.scopes()
        #expect(scopes[0].cursor == nil && scopes[0].checksum == nil)
        #expect(scopes[1].cursor != nil && scopes[1].checksum != nil)
        // The rebuild it calls for restores the scope.
        try RebuildApplier(context: fixture.context).rebuild(scope: "catalog")
        #expect(try PullApplier(context: fixture.context).pull().rebuildRequired.isEmpty)
    }

    @Test("a tampered row checksum in a rebuild page is rejected with nothing committed")
    func tamperedRowChecksum() throws {
        let fixture = try SyncFixture()
        try fixture.connect()
        let applier = RebuildApplier(context: fixture.context)
        let attempt = try applier.start(scope: "catalog")
        fixture.transport.setEdit { path, reply in
            guard path == "/sync/rebuild" else { return reply }
            return SyncReply(status: reply.status, body: Self.flipFirstDigest(reply.body))
        }
        #expect(throws: SyncError.contract(rule: "row_checksum_mismatch", member: "records[].row_checksum")) {
            try applier.runPage(scope: "catalog")
        }
        #expect(try applier.attempt(scope: "catalog") == attempt)
        #expect(try fixture.count("SELECT count(*) FROM _synchro_rebuild_page_receipts") == 0)
        #expect(try fixture.count("SELECT count(*) FROM categories") == 0)
        #expect(try fixture.count("SELECT count(*) FROM _synchro_scope_rows") == 0)
        #expect(try fixture.store.meta(.syncLock) == "0")
    }

    @Test("a tampered row checksum in a pull page is rejected and cursors stay as they were")
    func tamperedPull() throws {
        let fixture = try SyncFixture()
        try fixture.connectAndRebuild()
        _ = try fixture.server.engine.operatorWrite(
            table: "tbl_categories", pk: .number(JSONNumber(4)),
            row: .object(JSONObject([
                JSONMember("fld_category_id", .number(JSONNumber(4))),
                JSONMember("fld_category_name", .string("Garden")),
            ])))
        let before = try fixture.scopes()
        fixture.transport.setEdit { path, reply in
            path == "/sync/pull" ? SyncReply(status: reply.status, body: Self.flipFirstDigest(reply.body)) : reply
        }
        #expect(throws: SyncError.contract(rule: "row_checksum_mismatch", member: "changes[].row_checksum")) {
            try PullApplier(context: fixture.context).runPage()
        }
        let after = try fixture.scopes()
        #expect(after.map(\.cursor) == before.map(\.cursor))
        #expect(after.map(\.checksum) == before.map(\.checksum))
        let name = try fixture.storeFixture.inspect { try $0.scalar("SELECT name FROM categories WHERE id = 4") }
        #expect(name?.textValue != "Garden")
    }

    @Test("503 capture_pending on pull leaves every cursor, checksum and row unchanged")
    func capturePending() throws {
        let fixture = try SyncFixture()
        try fixture.connectAndRebuild()
        let before = try fixture.scopes()
        let rows = try fixture.count("SELECT count(*) FROM products")
        fixture.transport.setEdit { path, reply in
            guard path == "/sync/pull" else { return reply }
            return SyncReply(
                status: 503, body: Array(#"{"error":{"code":"capture_pending","message":"m","retryable":true}}"#.utf8))
        }
        let error = try #require(throws: SyncError.self) { try PullApplier(context: fixture.context).runPage() }
        #expect(error.isCapturePending)
        let after = try fixture.scopes()
        #expect(after.map(\.cursor) == before.map(\.cursor))
        #expect(after.map(\.checksum) == before.map(\.checksum))
        #expect(try fixture.count("SELECT count(*) FROM products") == rows)
    }

    @Test("a connect body with an extra member is a contract error and installs nothing")
    func connectContract() throws {
        let fixture = try SyncFixture()
        fixture.transport.setEdit { _, reply in
            var body = reply.body
            body.removeLast()  // the closing brace of the top-level object
            body += Array(#","extra":1}"#.utf8)
            return SyncReply(status: reply.status, body: body)
        }
        #expect(throws: SyncError.contract(rule: "unknown_member", member: "")) {
            try fixture.connect()
        }
        #expect(try fixture.store.meta(.schemaVersion) == nil || fixture.store.meta(.schemaVersion) == "0")
        #expect(try fixture.scopes().isEmpty)
    }

    @Test("a re-received rebuild page is a verified no-op and different content for its identity is refused")
    func rebuildPageReplay() throws {
        let fixture = try SyncFixture()
        try fixture.connect()
        let applier = RebuildApplier(context: fixture.context)
        let first = try applier.start(scope: "catalog")
        #expect(try applier.runPage(scope: "catalog") == false)
        let exchange = try #require(fixture.transport.lastExchange)
        let advanced = try applier.attempt(scope: "catalog")
        let receipts = "SELECT count(*) FROM _synchro_rebuild_page_receipts"
        let edges = "SELECT count(*) FROM _synchro_scope_rows"
        let (receiptCount, edgeCount) = (try fixture.count(receipts), try fixture.count(edges))

        #expect(try applier.apply(responseBody: exchange.reply.body, requestBody: exchange.request, attempt: first)
            == false)
        #expect(try applier.attempt(scope: "catalog") == advanced)
        #expect(try fixture.count(receipts) == receiptCount)
        #expect(try fixture.count(edges) == edgeCount)

        // Same JSON meaning, different octets: a different page content for a known identity.
        let respaced = [UInt8]("{ ".utf8) + exchange.reply.body.dropFirst()
        #expect(throws: SyncError.rebuildPageConflict(scope: "catalog")) {
            try applier.apply(responseBody: respaced, requestBody: exchange.request, attempt: first)
        }
        try applier.rebuild(scope: "catalog")
        #expect(try fixture.scopes().first?.checksum != nil)
    }

    @Test("removing a scope on pull deletes its provenance and the rows only it justified, creating no mutation")
    func scopeRemovalOnPull() throws {
        let fixture = try SyncFixture()
        try fixture.connectAndRebuild()
        #expect(try fixture.count("SELECT count(*) FROM notes") > 0)
        try fixture.server.engine.inject(.reassignScopes(user: "alice", grant: [], revoke: ["user:alice"]))
        let outcome = try PullApplier(context: fixture.context).pull()
        #expect(outcome.verifiedScopes == ["catalog"])
        #expect(try fixture.scopes().map(\.id) == ["catalog"])
        #expect(try fixture.count("SELECT count(*) FROM notes") == 0)
        #expect(try fixture.count("SELECT count(*) FROM _synchro_scope_rows WHERE scope_id = 'user:alice'") == 0)
        #expect(try fixture.count("SELECT count(*) FROM _synchro_pending_changes") == 0)
        #expect(try fixture.count("SELECT count(*) FROM products") > 0)
    }

    @Test("a connect that revokes a scope removes it with its provenance and orphaned rows, creating no mutation")
    func scopeRemovalOnConnect() throws {
        let fixture = try SyncFixture()
        try fixture.connectAndRebuild()
        try fixture.server.engine.inject(.reassignScopes(user: "alice", grant: [], revoke: ["user:alice"]))
        try fixture.connect()
        #expect(try fixture.scopes().map(\.id) == ["catalog"])
        #expect(try fixture.count("SELECT count(*) FROM notes") == 0)
        #expect(try fixture.count("SELECT count(*) FROM tasks") == 0)
        #expect(try fixture.count("SELECT count(*) FROM _synchro_pending_changes") == 0)
        #expect(try PullApplier(context: fixture.context).pull().verifiedScopes == ["catalog"])
    }

    @Test("a row protected by unresolved local intent keeps its local value while its scope still verifies")
    func protectedRow() throws {
        let fixture = try SyncFixture()
        try fixture.connectAndRebuild()
        try fixture.store.execute("UPDATE categories SET name = 'Mine' WHERE id = 3")
        _ = try fixture.server.engine.operatorWrite(
            table: "tbl_categories", pk: .number(JSONNumber(3)),
            row: .object(JSONObject([
                JSONMember("fld_category_id", .number(JSONNumber(3))),
                JSONMember("fld_category_name", .string("Kitchen")),
            ])))
        let outcome = try PullApplier(context: fixture.context).pull()
        #expect(outcome.verifiedScopes == ["catalog", "user:alice"])
        let name = try fixture.storeFixture.inspect { try $0.scalar("SELECT name FROM categories WHERE id = 3") }
        #expect(name?.textValue == "Mine")
        #expect(try fixture.count("SELECT count(*) FROM _synchro_pending_changes") == 1)
    }

    @Test(
        "a 200 body that breaks the response contract is rejected before any state changes",
        arguments: [
            ContractCase.pullChecksumKeyMissing, .pullChecksumKeyExtra, .pullChecksumMalformed,
            .pullCursorForRebuildScope, .rebuildChecksumOnIntermediate, .rebuildWrongScope, .rebuildExtraRecordMember,
            .connectFetchAction, .connectUnknownAction,
        ])
    func contractCases(_ contract: ContractCase) throws {
        let fixture = try SyncFixture()
        try fixture.connectAndRebuild()
        let before = try fixture.scopes()
        let receipts = try fixture.count("SELECT count(*) FROM _synchro_rebuild_page_receipts")
        fixture.transport.setEdit { path, reply in
            guard path == contract.path, let json = try? StrictJSONParser().parse(reply.body),
                let edited = try? CanonicalJSON.encode(contract.edit(json))
            else { return reply }
            return SyncReply(status: reply.status, body: edited)
        }
        let error = try #require(throws: SyncError.self) {
            if contract.path == "/sync/pull" {
                _ = try PullApplier(context: fixture.context).runPage()
            } else if contract.path == "/sync/connect" {
                try fixture.connect()
            } else {
                try RebuildApplier(context: fixture.context).rebuild(scope: "catalog")
            }
        }
        #expect(error.rule == "contract.\(contract.rule)")
        let after = try fixture.scopes()
        if contract.path == "/sync/pull" {
            #expect(after.map(\.cursor) == before.map(\.cursor))
            #expect(after.map(\.checksum) == before.map(\.checksum))
        }
        #expect(try fixture.count("SELECT count(*) FROM _synchro_rebuild_page_receipts") <= receipts)
        #expect(try fixture.count("SELECT count(*) FROM _synchro_pending_changes") == 0)
    }

    @Test("a final rebuild checksum that does not match local state installs nothing and forces a new rebuild ID")
    func rebuildChecksumMismatch() throws {
        let fixture = try SyncFixture()
        try fixture.connect()
        let applier = RebuildApplier(context: fixture.context)
        let first = try applier.start(scope: "user:alice")
        let finalRecords = Mutex(-1)
        fixture.transport.setEdit { _, reply in
            guard let json = try? StrictJSONParser().parse(reply.body), let object = json.objectValue,
                object["checksum"] != nil
            else { return reply }
            finalRecords.withLock { $0 = object["records"]?.arrayValue?.count ?? -1 }
            let zero = try? Checksum(digest: Array(repeating: 0, count: 32))
            let members = object.members.map { $0.key == "checksum" ? JSONMember("checksum", zero?.json ?? .null) : $0 }
            let body = (try? CanonicalJSON.encode(.object(JSONObject(members)))) ?? []
            return SyncReply(status: reply.status, body: body)
        }
        #expect(throws: SyncError.rebuildChecksumMismatch(scope: "user:alice")) {
            try applier.rebuild(scope: "user:alice")
        }
        #expect(try applier.attempt(scope: "user:alice") == nil)
        let alice = try #require(try fixture.scopes().first { $0.id == "user:alice" })
        #expect(alice.cursor == nil && alice.checksum == nil)
        // The final page that did not verify committed nothing (the finality window): its edges are not there.
        let edgesAfterMismatch = try fixture.count(
            "SELECT count(*) FROM _synchro_scope_rows WHERE scope_id = 'user:alice'")
        #expect(try fixture.count("SELECT count(*) FROM _synchro_rebuild_page_receipts") == 0)
        fixture.transport.setEdit(nil)
        let second = try applier.start(scope: "user:alice")
        #expect(second.rebuildID != first.rebuildID)
        try applier.rebuild(scope: "user:alice")
        #expect(try fixture.scopes().first { $0.id == "user:alice" }?.checksum != nil)
        let edges = try fixture.count("SELECT count(*) FROM _synchro_scope_rows WHERE scope_id = 'user:alice'")
        let final = finalRecords.withLock { $0 }
        #expect(final > 0)
        #expect(edgesAfterMismatch == edges - Int64(final))
    }

    /// Changes one hex digit of the first `row_checksum` digest in a body.
    static func flipFirstDigest(_ body: [UInt8]) -> [UInt8] {
        var text = String(decoding: body, as: UTF8.self)
        guard let marker = text.range(of: #""row_checksum":{"#),
            let digest = text.range(of: #""digest":""#, range: marker.upperBound..<text.endIndex)
        else { return body }
        let at = digest.upperBound
        let replacement: Character = text[at] == "0" ? "1" : "0"
        text.replaceSubrange(at...at, with: String(replacement))
        return Array(text.utf8)
    }
}

/// One way to break a 200 body, the route it applies to and the contract rule it must trip.
enum ContractCase: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case pullChecksumKeyMissing, pullChecksumKeyExtra, pullChecksumMalformed, pullCursorForRebuildScope
    case rebuildChecksumOnIntermediate, rebuildWrongScope, rebuildExtraRecordMember
    /// Protocol 3 never emits `fetch` (client contract §8.1): the manifest is inline or the answer is refused.
    case connectFetchAction, connectUnknownAction

    var testDescription: String { rawValue }

    var path: String {
        rawValue.hasPrefix("pull") ? "/sync/pull" : rawValue.hasPrefix("connect") ? "/sync/connect" : "/sync/rebuild"
    }

    var rule: String {
        switch self {
        case .pullChecksumKeyMissing, .pullChecksumKeyExtra: "checksum_key_set"
        case .pullChecksumMalformed: "invalid_checksum"
        case .connectFetchAction, .connectUnknownAction: "unknown_action"
        case .pullCursorForRebuildScope: "cursor_for_rebuild_scope"
        case .rebuildChecksumOnIntermediate: "forbidden_member"
        case .rebuildWrongScope: "wrong_scope"
        case .rebuildExtraRecordMember: "unknown_member"
        }
    }

    func edit(_ json: JSONValue) -> JSONValue {
        guard let object = json.objectValue else { return json }
        var members = object.members
        func replace(_ key: String, _ value: JSONValue) {
            members = members.map { $0.key == key ? JSONMember(key, value) : $0 }
        }
        switch self {
        case .pullChecksumKeyMissing:
            let checksums = object["checksums"]?.objectValue?.members ?? []
            replace("checksums", .object(JSONObject(Array(checksums.dropFirst()))))
        case .pullChecksumKeyExtra:
            let checksums = object["checksums"]?.objectValue?.members ?? []
            guard let first = checksums.first else { return json }
            replace("checksums", .object(JSONObject(checksums + [JSONMember("user:zed", first.value)])))
        case .pullChecksumMalformed:
            let checksums = (object["checksums"]?.objectValue?.members ?? []).enumerated().map { index, member in
                index > 0 ? member : JSONMember(member.key, .object(
                    (member.value.objectValue ?? JSONObject([])).replacing("digest", .string("not-hex"))))
            }
            replace("checksums", .object(JSONObject(checksums)))
        case .connectFetchAction, .connectUnknownAction:
            let schema = object["schema"]?.objectValue ?? JSONObject([])
            replace("schema", .object(schema.replacing(
                "action", .string(self == .connectFetchAction ? "fetch" : "replace_later"))))
        case .pullCursorForRebuildScope:
            replace("rebuild", .array([.string("catalog")]))
            replace("scope_cursors", .object(JSONObject([JSONMember("catalog", .string("c"))])))
        case .rebuildChecksumOnIntermediate:
            let digest = JSONValue.string(String(repeating: "0", count: 64))
            members.append(JSONMember("checksum", .object(JSONObject([
                JSONMember("algorithm", .string("sha256")), JSONMember("version", .number(JSONNumber(1))),
                JSONMember("encoding", .string("hex")), JSONMember("digest", digest),
            ]))))
            if object["has_more"] == .bool(false) { return json }
        case .rebuildWrongScope:
            replace("scope", .string("user:bob"))
        case .rebuildExtraRecordMember:
            let records = (object["records"]?.arrayValue ?? []).map { record -> JSONValue in
                .object(JSONObject((record.objectValue?.members ?? []) + [JSONMember("op", .string("upsert"))]))
            }
            replace("records", .array(records))
        }
        return .object(JSONObject(members))
    }
}
