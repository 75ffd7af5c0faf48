import Foundation
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// Staging drills (issue #16, docs/reliability.md "Staging drills"): each starts `seedkit serve`, warms stores
/// with `seedkit sync`, leaves local intent behind, changes the server through its operator routes, and runs
/// `seedkit sync` again. Each ends converged (`validate --server` passes, the rows of a fresh store) or in a
/// stored, named blocking state with its documented exit status. `make test` runs the short form; `make drills`
/// runs them with more rows and stores (`SEEDKIT_DRILLS=long`).
@Suite("Staging drills")
struct StagingDrillTests {
    /// Warmed stores with a queued local note each, and the server.
    struct Warmed {
        let server: DrillServer
        let stores: [DrillStore]
    }

    /// Starts a server, warms `DrillScale.stores` stores of alice, and queues one local note in each.
    static func warm(_ drill: String) throws -> Warmed {
        let server = try DrillServer()
        var stores: [DrillStore] = []
        for index in 0..<DrillScale.stores {
            let store = DrillStore(server, name: "\(drill)-\(index)")
            let first = try store.sync(["--until-current"])
            try #require(first.status == 0, "\(drill): warm sync: \(first.stderrText)")
            let write = try store.sql(
                "INSERT INTO notes (id, owner_id, title, pinned, updated_at) VALUES (?, 'alice', 'drill', 0, ?)",
                ["drill-note-\(drill)-\(index)", "2026-01-02T03:04:05.000Z"])
            try #require(write.status == 0, "\(drill): local write: \(write.stderrText)")
            stores.append(store)
        }
        return Warmed(server: server, stores: stores)
    }

    /// Syncs every store until current and checks each converged with its local note pushed.
    static func expectConverged(_ drill: String, _ warmed: Warmed, sourceLocation: SourceLocation = #_sourceLocation)
        throws
    {
        for (index, store) in warmed.stores.enumerated() {
            let run = try store.sync(["--until-current"])
            #expect(run.status == 0, "\(drill): sync: \(run.stderrText)", sourceLocation: sourceLocation)
            try store.expectConverged(drill, sourceLocation: sourceLocation)
            let notes = try store.syncedRows()["notes"] ?? []
            #expect(notes.filter { $0.contains("\"drill-note-\(drill)-\(index)\"") }.count == 1,
                    "\(drill): the local note was lost", sourceLocation: sourceLocation)
        }
    }

    // MARK: - Class 2 (`replace`)

    @Test("class 2 publications: each change is applied in place and every store converges with its intent",
          arguments: ["nullable", "new_field", "new_table", "index_added_and_dropped", "writable"])
    func class2(change: String) throws {
        let warmed = try Self.warm("c2-\(change)")
        let server = warmed.server
        switch change {
        case "nullable":
            try server.publish("class_2") { $0.setField("tbl_notes", "fld_note_title", "nullable", .bool(true)) }
        case "new_field":
            try server.publish("class_2") { $0.addField("tbl_notes", "fld_note_mood", type: "string") }
        case "new_table":
            try server.publish("class_2") { edit in
                edit.addTable(ManifestEdit.labelsTable(textNullable: true))
            }
        case "index_added_and_dropped":
            try server.publish("class_2") { edit in
                edit.setTable("tbl_tasks", "indexes", .array([]))
                edit.setTable("tbl_notes", "indexes", .array(edit.indexes("tbl_notes") + [.object(JSONObject([
                    JSONMember("index_id", .string("idx_notes_title")), JSONMember("name", .string("notes_title")),
                    JSONMember("field_ids", .array([.string("fld_note_title")])), JSONMember("unique", .bool(false)),
                ]))]))
            }
        default:
            try server.publish("class_2") { edit in
                edit.addField("tbl_tasks", "fld_task_tag", type: "string")
                edit.setField("tbl_tasks", "fld_task_tag", "writable", .bool(false))
            }
            for store in warmed.stores { try store.sync() }
            try server.publish("class_2") { $0.setField("tbl_tasks", "fld_task_tag", "writable", .bool(true)) }
        }
        try Self.expectConverged("c2-\(change)", warmed)
    }

    // MARK: - Class 3 (`rebuild_local`)

    @Test("class 3 publications: the affected scopes are rebuilt and every store converges with its intent",
          arguments: ["server_default", "composition", "relation"])
    func class3(change: String) throws {
        let warmed = try Self.warm("c3-\(change)")
        let server = warmed.server
        switch change {
        case "server_default":
            let defaults = JSONValue.object(JSONObject([JSONMember("tbl_products", .object(JSONObject([
                JSONMember("fld_product_origin", .string("EU")),
            ])))]))
            try server.publish("class_3", affected: ["catalog"], defaults: defaults) {
                $0.addField("tbl_products", "fld_product_origin", type: "string", nullable: false)
            }
        case "composition":
            try server.publish("class_3", affected: ["catalog"]) {
                $0.setTable("tbl_products", "composition", .string("multi_scope"))
            }
        default:
            try server.publish("class_3", affected: ["user:{user}"]) {
                $0.setTable("tbl_notes", "relation_id", .string("rel_notes_v2"))
            }
        }
        try Self.expectConverged("c3-\(change)", warmed)
    }

    // MARK: - Class 4 (`unsupported`)

    @Test("class 4: sync exits 3 with the stored refusal until --schema-reset, then converges")
    func class4ThenReset() throws {
        let warmed = try Self.warm("c4")
        try warmed.server.publish("class_4") { $0.removeField("tbl_notes", "fld_note_score") }
        for store in warmed.stores {
            let blocked = try store.sync()
            #expect(blocked.status == 3, "c4: \(blocked.stderrText)")
            let again = try store.sync()
            #expect(again.status == 3, "c4: a stored refusal is not re-asked: \(again.stderrText)")
            #expect(again.stderrText.contains("--schema-reset"))
            let reset = try store.sync(["--schema-reset"])
            #expect(reset.status == 0, "c4: reset: \(reset.stderrText)")
        }
        try Self.expectConverged("c4", warmed)
    }

    // MARK: - Server-side events

    @Test("a lost push response followed by a schema publication: the replay is reconciled, nothing doubled")
    func lostPushThenPublication() throws {
        let warmed = try Self.warm("lost-push")
        let store = try #require(warmed.stores.first)
        try warmed.server.fault([
            JSONMember("fault", .string("lose_response")), JSONMember("route", .string("/sync/push")),
            JSONMember("count", .number(JSONNumber(1))),
        ])
        // The run retries the lost push itself (a lost response is retryable) and replays the same batch.
        let lost = try store.sync()
        #expect(lost.status == 0, "lost-push: \(lost.stderrText)")
        try warmed.server.publish("class_2") { $0.addField("tbl_notes", "fld_note_mood", type: "string") }
        try Self.expectConverged("lost-push", warmed)
    }

    @Test("retirement: sync exits 3 with client_retired stored, the queued write kept, nothing sent again")
    func retirement() throws {
        let warmed = try Self.warm("retired")
        let store = try #require(warmed.stores.first)
        let clientID = try #require(try store.inspect().objectValue?["client_id"]?.stringValue)
        try warmed.server.fault([
            JSONMember("fault", .string("retire_client")), JSONMember("user", .string("alice")),
            JSONMember("client_id", .string(clientID)),
        ])
        let run = try store.sync()
        #expect(run.status == 3, "retired: \(run.stderrText)")
        #expect(run.stderrText.contains("client_retired"))
        let stored = try store.inspect().objectValue?["blocking_error"]?.objectValue
        #expect(stored?["code"]?.stringValue == "client_retired")
        #expect(try store.sync().status == 3)
    }

    @Test("generation expiry, a membership change, scope grant and revoke, a corrupted checksum: each converges",
          arguments: ["generation", "membership", "grant_revoke", "corrupt_checksum"])
    func serverEvents(event: String) throws {
        let warmed = try Self.warm("event-\(event)")
        let server = warmed.server
        switch event {
        case "generation":
            for store in warmed.stores {
                let clientID = try #require(try store.inspect().objectValue?["client_id"]?.stringValue)
                try server.fault([
                    JSONMember("fault", .string("expire_client_generation")), JSONMember("user", .string("alice")),
                    JSONMember("client_id", .string(clientID)),
                ])
            }
        case "membership":
            try server.fault([JSONMember("fault", .string("change_membership"))])
        case "grant_revoke":
            try server.fault([
                JSONMember("fault", .string("reassign_scopes")), JSONMember("user", .string("alice")),
                JSONMember("grant", .array([])), JSONMember("revoke", .array([.string("catalog")])),
            ])
            for store in warmed.stores { #expect(try store.sync().status == 0) }
            try server.fault([
                JSONMember("fault", .string("reassign_scopes")), JSONMember("user", .string("alice")),
                JSONMember("grant", .array([.string("catalog")])), JSONMember("revoke", .array([])),
            ])
        default:
            try server.fault([JSONMember("fault", .string("corrupt_checksum")), JSONMember("scope", .string("catalog"))])
        }
        try Self.expectConverged("event-\(event)", warmed)
    }

    @Test("429 and 503 storms with Retry-After: the run waits them out and converges")
    func throttlingStorms() throws {
        let warmed = try Self.warm("storm")
        for (route, status) in [("/sync/pull", Int64(429)), ("/sync/push", Int64(503))] {
            try warmed.server.fault([
                JSONMember("fault", .string("reject_requests")), JSONMember("route", .string(route)),
                JSONMember("count", .number(JSONNumber(Int64(DrillScale.isLong ? 3 : 1)))),
                JSONMember("status", .number(JSONNumber(status))),
            ])
        }
        try Self.expectConverged("storm", warmed)
    }

    @Test("proxy 502 and 504 HTML pages, Retry-After as an HTTP-date and in seconds: waited out, converged")
    func proxyStorms() throws {
        let warmed = try Self.warm("proxy")
        for (route, status, form) in [("/sync/pull", Int64(502), "http_date"), ("/sync/push", Int64(504), "seconds")] {
            try warmed.server.fault([
                JSONMember("fault", .string("proxy_error")), JSONMember("route", .string(route)),
                JSONMember("count", .number(JSONNumber(Int64(DrillScale.isLong ? 3 : 1)))),
                JSONMember("status", .number(JSONNumber(status))), JSONMember("retry_after", .string(form)),
                JSONMember("seconds", .number(JSONNumber(Int64(1)))),
            ])
        }
        try Self.expectConverged("proxy", warmed)
    }

    @Test("a Retry-After beyond the one-hour cap: exit 4 naming the next attempt, the backoff stored, no request")
    func retryAfterBeyondTheCap() throws {
        let warmed = try Self.warm("cap")
        let store = try #require(warmed.stores.first)
        try warmed.server.fault([
            JSONMember("fault", .string("proxy_error")), JSONMember("route", .string("/sync/pull")),
            JSONMember("count", .number(JSONNumber(Int64(1)))), JSONMember("status", .number(JSONNumber(Int64(503)))),
            JSONMember("retry_after", .string("seconds")), JSONMember("seconds", .number(JSONNumber(Int64(7200)))),
        ])
        let run = try store.sync()
        #expect(run.status == 4, "cap: \(run.stderrText)")
        #expect(run.stderrText.contains("next attempt is allowed at"))
        // The next run honours the stored deadline without sending anything: the fault would answer it (once).
        let again = try store.sync(["--json"])
        #expect(again.status == 4, "cap: \(again.stderrText)")
        #expect(again.stdoutText.contains("next_attempt_at_ms"))
    }

    @Test("a lost first-connect response: the fresh store leaves the ID the server registered and converges")
    func lostFirstConnect() throws {
        let server = try DrillServer()
        let store = DrillStore(server, name: "lost-first")
        try server.fault([
            JSONMember("fault", .string("lose_response")), JSONMember("route", .string("/sync/connect")),
            JSONMember("count", .number(JSONNumber(Int64(1)))),
        ])
        let run = try store.sync(["--until-current"])
        #expect(run.status == 0, "lost-first: \(run.stderrText)")
        let replaced = try store.inspect().objectValue?["replaced_client_ids"]?.arrayValue ?? []
        #expect(replaced.count == 1, "lost-first: the store should have left the registered ID")
        try store.expectConverged("lost-first")
    }
}
