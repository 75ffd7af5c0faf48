import SQLiteKit
import SynchroClient
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// Deletes in both directions (client contract §7.2, §7.3, §10.2): a pushed hard delete answered without a row,
/// a conflict that reports true absence, and pulled deletes with and without a tombstone row.
@Suite("Delete outcomes")
struct DeleteOutcomeTests {
    let fixture: SyncFixture

    init() throws {
        fixture = try SyncFixture(rows: 60, pageLimit: 40)
        try fixture.connectAndRebuild()
    }

    /// The smallest ID of `table`'s local rows.
    private func firstID(_ table: String) throws -> String {
        try fixture.storeFixture.inspect { try $0.scalar("SELECT min(id) FROM \(table)")?.textValue ?? "" }
    }

    private func version(_ table: String, _ id: String) throws -> (version: String?, checksum: String?)? {
        try fixture.storeFixture.inspect { connection in
            try connection.rows(
                "SELECT server_version, row_checksum FROM _synchro_row_versions WHERE table_name = ? AND record_id = ?",
                [.text(table), .text(id)]
            ).first.map { ($0[0].textValue, $0[1].textValue) }
        }
    }

    @Test("an accepted hard delete without a row removes the row and keeps only the new version (a fence)")
    func acceptedDeleteWithoutRowKeepsFence() throws {
        let id = try firstID("tasks")
        let before = try #require(try version("tasks", id))
        try fixture.store.execute("DELETE FROM tasks WHERE id = ?", [.text(id)])
        let outcome = try PushExchange(store: fixture.store, transport: fixture.transport).pushNext()
        #expect(outcome == .reconciled(.init(applied: 1, conflicts: 0, rejectedTerminal: 0)))
        #expect(try fixture.count("SELECT count(*) FROM tasks WHERE id = '\(id)'") == 0)
        let after = try #require(try version("tasks", id))
        #expect(after.version != nil && after.version != before.version)
        #expect(after.checksum == nil, "a fence-only delete keeps the version without a checksum")
    }

    @Test("a conflict reporting true absence removes the row and its version, and records the rejection")
    func conflictWithTrueAbsence() throws {
        let id = try firstID("tasks")
        try fixture.store.execute("UPDATE tasks SET title = 'changed' WHERE id = ?", [.text(id)])
        // The server's answer rewritten as a conflict whose row no longer exists: no row, no version.
        fixture.transport.setEdit { path, reply in
            guard path == "/sync/push", let object = try? StrictJSONParser().parse(reply.body).objectValue,
                let accepted = object["accepted"]?.arrayValue?.first?.objectValue
            else { return reply }
            let conflict = JSONObject(accepted.members.filter {
                !["server_version", "server_row", "row_checksum", "status"].contains($0.key)
            } + [
                JSONMember("status", .string("conflict")), JSONMember("code", .string("version_conflict")),
                JSONMember("message", .string("the row is gone")),
            ])
            let edited = object.replacing("accepted", .array([])).replacing("rejected", .array([.object(conflict)]))
            return SyncReply(status: 200, body: (try? CanonicalJSON.encode(.object(edited))) ?? reply.body)
        }
        let outcome = try PushExchange(store: fixture.store, transport: fixture.transport).pushNext()
        #expect(outcome == .reconciled(.init(applied: 0, conflicts: 1, rejectedTerminal: 0)))
        #expect(try fixture.count("SELECT count(*) FROM tasks WHERE id = '\(id)'") == 0)
        #expect(try version("tasks", id) == nil)
        #expect(try fixture.count("SELECT count(*) FROM _synchro_rejected_mutations WHERE code = 'version_conflict'")
            == 1)
    }

    @Test("pulled deletes: a rowless delete drops the row and its provenance, a tombstone is verified and applied")
    func pulledDeletes() throws {
        let task = try firstID("tasks")
        let note = try firstID("notes")
        try fixture.server.engine.operatorDelete(
            table: "tbl_tasks", pk: .string(task))
        try fixture.server.engine.operatorDelete(
            table: "tbl_notes", pk: .string(note))
        _ = try PullApplier(context: fixture.context).pull()
        #expect(try fixture.count("SELECT count(*) FROM tasks WHERE id = '\(task)'") == 0)
        #expect(try fixture.count("SELECT count(*) FROM _synchro_scope_rows WHERE record_id = '\(task)'") == 0)
        #expect(try fixture.count("SELECT count(*) FROM notes WHERE id = '\(note)' AND deleted_at IS NOT NULL") == 1)
        #expect(try fixture.count("SELECT count(*) FROM _synchro_pending_changes") == 0, "no server delete echoes")
        #expect(try fixture.scopes().allSatisfy { $0.cursor != nil && $0.checksum != nil })
    }

    @Test("a pulled tombstone whose row checksum does not verify fails the page and changes nothing")
    func tamperedTombstoneIsRefused() throws {
        let note = try firstID("notes")
        try fixture.server.engine.operatorDelete(
            table: "tbl_notes", pk: .string(note))
        let before = try fixture.scopes()
        fixture.transport.setEdit { path, reply in
            guard path == "/sync/pull", let object = try? StrictJSONParser().parse(reply.body).objectValue else {
                return reply
            }
            let changes = (object["changes"]?.arrayValue ?? []).map { change -> JSONValue in
                guard let change = change.objectValue, change["op"] == .string("delete"),
                    let checksum = change["row_checksum"]?.objectValue
                else { return change }
                return .object(change.replacing(
                    "row_checksum", .object(checksum.replacing("digest", .string(String(repeating: "0", count: 64))))))
            }
            return SyncReply(status: 200, body: (try? CanonicalJSON.encode(.object(
                object.replacing("changes", .array(changes))))) ?? reply.body)
        }
        let error = try #require(throws: SyncError.self) { try PullApplier(context: fixture.context).pull() }
        #expect(error.rule == "contract.row_checksum_mismatch")
        #expect(try fixture.count("SELECT count(*) FROM notes WHERE id = '\(note)' AND deleted_at IS NULL") == 1)
        #expect(try fixture.scopes().map(\.cursor) == before.map(\.cursor))
    }

    @Test("a pull whose request no longer describes the local scopes applies nothing and moves no cursor back")
    func pullAgainstChangedLocalStateIsRefused() throws {
        let path = fixture.storeFixture.path
        let before = try fixture.scopes()
        // While the pull is in flight, another writer moves a cursor: the response answers a request that no longer
        // describes the store, so installing its cursors could move one backward.
        fixture.transport.setEdit { requested, reply in
            if requested == "/sync/pull" {
                if let writer = try? Connection(path: path, mode: .readWrite) {
                    try? writer.setBusyTimeout(milliseconds: 5_000)
                    try? writer.execute(
                        "UPDATE _synchro_scopes SET cursor = 'moved-meanwhile' WHERE scope_id = 'catalog'")
                    writer.close()
                }
            }
            return reply
        }
        #expect(throws: SyncError.invalidState(reason: "scope state changed during the pull")) {
            try PullApplier(context: fixture.context).pull()
        }
        let after = try fixture.scopes()
        #expect(after.first { $0.id == "catalog" }?.cursor == "moved-meanwhile")
        #expect(after.first { $0.id == "user:alice" }?.cursor == before.first { $0.id == "user:alice" }?.cursor)
    }
}
