import Foundation
import SQLiteKit
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// What push leaves in the server database, read and faulted through a second SQLite connection:
/// the capture log the materializer consumes, the client's epoch and fence, retirement, and the
/// rollback of a failed first execution (`spec/wire-protocol.md` §4.6, `spec/integrity.md` §6.1).
@Suite("Push endpoint: durable state")
struct PushEndpointDurabilityTests {
    /// A second connection to the running server's database file.
    static func database(_ server: RunningServer) throws -> Connection {
        let db = try Connection(path: server.directory.path("server.db"))
        try db.setBusyTimeout(milliseconds: 5000)
        return db
    }

    static func clientCounters(_ db: Connection, client: String) throws -> (epoch: Int64, fence: Int64) {
        let row = try #require(try db.rows(
            "SELECT accepted_write_epoch, pending_fence_lsn FROM clients WHERE client_id = ?", [.text(client)]).first)
        return (row[0].integerValue ?? -1, row[1].integerValue ?? -1)
    }

    @Test("each applied write is captured; the epoch grows once per push that applied, the fence is its last LSN")
    func captureAndEpoch() throws {
        let server = try RunningServer(materialization: .manual)
        let client = try PushTestClient.connect(server)
        let db = try Self.database(server)
        let before = try db.scalar("SELECT COALESCE(MAX(lsn), 0) FROM capture_log")?.integerValue ?? 0

        let reply = try client.push(batch: 1, [
            client.insertNote(1, note: "n-1"), client.insertTask(2, task: "t-1"),
            client.updateNote(3, note: "absent", base: "v-x"),
        ])
        try #require(reply.accepted.count == 2, "\(reply.text)")
        let captured = try db.rows(
            "SELECT lsn, table_id, pk, row, server_version, state FROM capture_log WHERE lsn > ? ORDER BY lsn",
            [.integer(before)])
        #expect(captured.count == 2)
        #expect(captured.map { $0[1].textValue } == ["tbl_notes", "tbl_tasks"])
        #expect(captured.map { $0[2].blobValue.map { String(decoding: $0, as: UTF8.self) } } == [#""n-1""#, #""t-1""#])
        #expect(captured.map { $0[4].textValue } == reply.accepted.map { $0["server_version"]?.stringValue })
        #expect(captured.allSatisfy { $0[5].integerValue == 0 })
        let firstRow = try #require(captured.first?[3].blobValue)
        #expect(firstRow == (try CanonicalJSON.encode(try #require(reply.accepted.first?["server_row"]))))
        var counters = try Self.clientCounters(db, client: client.clientID)
        #expect(counters.epoch == 1)
        #expect(counters.fence == captured.last?[0].integerValue)

        // Conflicts only: nothing captured, epoch and fence unchanged.
        _ = try client.push(batch: 2, [client.insertNote(4, note: "n-1")])
        #expect(try Self.clientCounters(db, client: client.clientID).epoch == 1)

        // A fence-only delete is captured without a row.
        let version = try #require(reply.accepted[1]["server_version"]?.stringValue)
        _ = try client.push(batch: 3, [client.deleteTask(5, task: "t-1", base: version)])
        let fence = try #require(try db.rows("SELECT row, state FROM capture_log ORDER BY lsn DESC LIMIT 1").first)
        #expect(fence[0].isNull && fence[1].integerValue == 2)
        counters = try Self.clientCounters(db, client: client.clientID)
        #expect(counters.epoch == 2)
    }

    @Test("a SQLite failure during first execution rolls everything back and answers 503 with Retry-After")
    func operationalFailureRollsBack() throws {
        let server = try RunningServer()
        let client = try PushTestClient.connect(server)
        let db = try Self.database(server)
        let body = client.body(batch: 1, [client.insertNote(1, note: "n-1")])
        // The ledger write comes after the source write, so the fault proves the source write is undone.
        try db.execute("""
            CREATE TRIGGER injected_fault BEFORE INSERT ON push_batches BEGIN SELECT RAISE(ABORT, 'injected'); END;
            """)
        let failed = try client.push(body)
        #expect(failed.status == 503)
        #expect(failed.errorCode == "temporary_unavailable")
        #expect(failed.error?["retryable"] == .bool(true))
        #expect(failed.header("Retry-After") == "5")
        #expect(try db.scalar("SELECT COUNT(*) FROM source_rows WHERE pk = ?", [.blob(Array(#""n-1""#.utf8))])?
            .integerValue == 0)
        #expect(try Self.clientCounters(db, client: client.clientID).epoch == 0)

        try db.execute("DROP TRIGGER injected_fault")
        let retried = try client.push(body)
        #expect(retried.accepted.first?["status"] == .string("applied"), "\(retried.text)")
    }

    @Test("a retired client is 409 client_retired, even for a batch it completed before")
    func retiredClient() throws {
        let server = try RunningServer()
        let client = try PushTestClient.connect(server)
        let body = client.body(batch: 1, [client.insertNote(1, note: "n-1")])
        #expect(try client.push(body).status == 200)
        let db = try Self.database(server)
        try db.run("UPDATE clients SET retired = 1 WHERE client_id = ?", [.text(client.clientID)])
        let reply = try client.push(body)
        #expect(reply.status == 409)
        #expect(reply.errorCode == "client_retired")
    }
}
