import Foundation
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// The client contract's process-death table, proved on the built binary: `seedkit sql` and `seedkit sync`
/// are killed with SIGKILL at each named durable boundary (`SEEDKIT_CRASH_AT`), then the same database is
/// synced again without the crash point. Afterwards no authored mutation is lost or duplicated (the server
/// holds exactly what was written, every mutation was accepted once, nothing was rejected), no cursor or
/// checksum is ahead of its rows (`seedkit validate` recomputes every digest, and the next cycle is a steady
/// 1 connect + 1 pull that verifies every scope without a rebuild), and SQLite's integrity check passes. The
/// killed store itself already validates: every committed state is a consistent one.
@Suite("process death at every durable boundary", .serialized)
struct SyncProcessDeathTests {
    /// Where in the scenario the kill happens.
    enum Stage: Sendable {
        /// The first `sql` write of the device after its first sync.
        case capture
        /// The device's first sync (connect, rebuild of both scopes, pull).
        case firstSync
        /// The sync that pushes the device's writes and pulls another device's writes in several pages.
        case secondSync
        /// The second sync dies once after sealing, the server then expires the generation, and the sync
        /// that renews the sealed batch dies at the named point.
        case renewal
        /// The server published a class 3 schema (catalog affected) before the second sync.
        case migration
        /// The server published a class 4 schema before the second sync, which therefore stops with
        /// `unsupported`; `sync --schema-reset` dies at the named point and is run again.
        case reset
        /// The server refuses the second sync's push once with 503 and `Retry-After`; the sync dies once the
        /// retry record is durable, and the restart (its clock moved past the deadline through the
        /// `SEEDKIT_TEST_CLOCK_OFFSET_MS` test hook instead of sleeping) replays the sealed batch.
        case retry
    }

    /// One boundary and where the scenario reaches it.
    struct Case: Sendable, CustomTestStringConvertible {
        let point: String
        let stage: Stage
        var testDescription: String { point }
    }

    static let cases: [Case] = [
        Case(point: "capture.before_commit", stage: .capture),
        Case(point: "capture.committed", stage: .capture),
        Case(point: "connect.received", stage: .firstSync),
        Case(point: "connect.installed", stage: .firstSync),
        Case(point: "rebuild.started", stage: .firstSync),
        Case(point: "rebuild.started:2", stage: .firstSync),
        Case(point: "rebuild.received:2", stage: .firstSync),
        Case(point: "rebuild.page", stage: .firstSync),
        Case(point: "rebuild.page:2", stage: .firstSync),
        Case(point: "rebuild.final", stage: .firstSync),
        Case(point: "rebuild.final:2", stage: .firstSync),
        Case(point: "pull.page", stage: .firstSync),
        Case(point: "connect.installed", stage: .secondSync),
        Case(point: "push.sealed", stage: .secondSync),
        Case(point: "push.received", stage: .secondSync),
        Case(point: "push.reconciled", stage: .secondSync),
        Case(point: "pull.received:2", stage: .secondSync),
        Case(point: "pull.page", stage: .secondSync),
        Case(point: "pull.page:2", stage: .secondSync),
        Case(point: "push.renewed", stage: .renewal),
        Case(point: "schema.prepared", stage: .migration),
        Case(point: "schema.applied", stage: .migration),
        Case(point: "rebuild.page", stage: .migration),
        Case(point: "schema.prepared", stage: .reset),
        Case(point: "schema.applied", stage: .reset),
        Case(point: "rebuild.final", stage: .reset),
        Case(point: "backoff.recorded", stage: .retry),
    ]

    @Test("a kill at the boundary loses and duplicates nothing, and the next sync is steady", arguments: cases)
    func killAndResume(_ crash: Case) throws {
        let world = try DeviceWorld()
        let device = world.database("device.db")

        if crash.stage == .firstSync {
            try world.expectKilled(world.sync(device, pageLimit: 20, crashAt: crash.point))
            try world.expectValid(device)
        }
        try world.expectSuccess(world.sync(device, pageLimit: 20))
        let note = try world.firstID("SELECT id FROM notes WHERE owner_id = 'alice' ORDER BY id LIMIT 1", device)
        let task = try world.firstID("SELECT id FROM tasks WHERE owner_id = 'alice' ORDER BY id LIMIT 1", device)

        // The device's writes: three inserts, an update and a delete of rows the server already had.
        let insert = "INSERT INTO notes (id, owner_id, title, pinned, updated_at) VALUES (?, 'alice', ?, ?, ?)"
        let first = [insert, "crash-a1", "first", "0", Self.localTime]
        if crash.stage == .capture {
            try world.expectKilled(world.sql(device, first, crashAt: crash.point))
            try world.expectValid(device)
            let committed = crash.point == "capture.committed"
            // Both the row and its mutation committed, or neither did.
            #expect(try world.rows("SELECT id FROM notes WHERE id = 'crash-a1'", device).count == (committed ? 1 : 0))
            #expect(try world.inspect(device).pending == (committed ? 1 : 0))
            if !committed { try world.expectSuccess(world.sql(device, first)) }
        } else {
            try world.expectSuccess(world.sql(device, first))
        }
        try world.expectSuccess(world.sql(device, [insert, "crash-a2", "second", "1", Self.localTime]))
        try world.expectSuccess(world.sql(device, [insert, "crash-a3", "third", "0", Self.localTime]))
        try world.expectSuccess(
            world.sql(device, ["UPDATE notes SET title = 'edited on the device' WHERE id = ?", note]))
        try world.expectSuccess(world.sql(device, ["DELETE FROM tasks WHERE id = ?", task]))

        // Another device of the same user writes four notes, so the next pull has several pages.
        let other = world.database("other.db")
        try world.expectSuccess(world.sync(other, pageLimit: 100))
        let values = (1...4).map { ["crash-w\($0)", "written elsewhere \($0)", "0", Self.localTime] }.joined()
        let rows = Array(repeating: "(?, 'alice', ?, ?, ?)", count: 4).joined(separator: ", ")
        try world.expectSuccess(world.sql(
            other, ["INSERT INTO notes (id, owner_id, title, pinned, updated_at) VALUES \(rows)"] + values))
        try world.expectSuccess(world.sync(other, pageLimit: 100))

        switch crash.stage {
        case .secondSync:
            try world.expectKilled(world.sync(device, pageLimit: 4, crashAt: crash.point))
            try world.expectValid(device)
        case .renewal:
            try world.expectKilled(world.sync(device, pageLimit: 4, crashAt: "push.sealed"))
            let clientID = try #require(try world.inspect(device).clientID)
            try world.server.engine.inject(.expireClientGeneration(user: "alice", client: clientID))
            try world.expectKilled(world.sync(device, pageLimit: 4, crashAt: crash.point))
            try world.expectValid(device)
        case .migration:
            try world.publish(transition: "class_3", affected: ["catalog"], addField: ("tbl_products", "origin"))
            try world.expectKilled(world.sync(device, pageLimit: 4, crashAt: crash.point))
            try world.expectValid(device)
        case .reset:
            try world.publish(transition: "class_4", removeField: ("tbl_tasks", "fld_task_due"))
            // The run that receives `unsupported` stores it and ends blocked, as every later run does.
            let refused = try world.sync(device, pageLimit: 4)
            #expect(refused.status == 3 && refused.stderrText.contains("incompatible_schema_transition"))
            // The stored blocking error now refuses a plain sync before any request (it sends no connect).
            let blocked = try world.sync(device, pageLimit: 4, json: true)
            #expect(blocked.status == 3 && blocked.stderrText.contains("blocked"))
            #expect(!blocked.lines.contains { $0.contains("phase_started") })
            // The JSON error line names the stored error and its recovery; the text points at the flag.
            let errorLine = try #require(blocked.lines.last.flatMap { try? StrictJSONParser().parse($0).objectValue })
            let stored = try #require(errorLine["blocked"]?.objectValue)
            #expect(stored["recovery_action"]?.stringValue == "schema_reset")
            #expect(stored["code"]?.stringValue?.isEmpty == false)
            #expect(blocked.stderrText.contains("seedkit sync --schema-reset"))
            try world.expectValid(device)
            try world.expectKilled(world.sync(device, pageLimit: 4, crashAt: crash.point, extra: ["--schema-reset"]))
            try world.expectValid(device)
            try world.expectSuccess(world.sync(device, pageLimit: 4, extra: ["--schema-reset"]))
        case .retry:
            try world.server.engine.inject(.rejectRequests(route: "/sync/push", count: 1, status: 503))
            try world.expectKilled(world.sync(device, pageLimit: 4, crashAt: crash.point))
            try world.expectValid(device)
            try world.expectRetryResumesSealedBatch(device)
        case .capture, .firstSync:
            break
        }
        try world.expectSuccess(world.sync(device, pageLimit: 4))

        // Every mutation was accepted exactly once: nothing pending, nothing rejected (a re-sent insert under a
        // new identity would come back as row_already_exists).
        let state = try world.inspect(device)
        #expect(state.pending == 0)
        #expect(state.accepted == 5)
        #expect(state.rejections == 0)
        #expect(state.blocked == false)

        // The steady cycle: one connect, one pull, every scope verified against the server's checksums.
        let steady = try world.sync(device, pageLimit: 4, json: true)
        try world.expectSuccess(steady)
        let last = try #require(steady.lines.last)
        let summary = try #require(try StrictJSONParser().parse(last).objectValue)
        #expect(try CanonicalJSON.string(summary["requests"] ?? .null)
            == #"{"connect":1,"pull":1,"push":0,"rebuild":0}"#)
        #expect(summary["scopes_verified"] == .array([.string("catalog"), .string("user:alice")]))
        #expect(summary["scopes_rebuilt"] == .array([]))
        try world.expectValid(device)

        // The server holds exactly what was written: a fresh device of the same user sees the same rows.
        let reader = world.database("reader.db")
        try world.expectSuccess(world.sync(reader, pageLimit: 100))
        let query = "SELECT id, title, pinned FROM notes WHERE id LIKE 'crash-%' OR id = ? ORDER BY id"
        let expected = [
            #"{"id":"crash-a1","pinned":0,"title":"first"}"#, #"{"id":"crash-a2","pinned":1,"title":"second"}"#,
            #"{"id":"crash-a3","pinned":0,"title":"third"}"#,
        ] + (1...4).map { #"{"id":"crash-w\#($0)","pinned":0,"title":"written elsewhere \#($0)"}"# }
            + [#"{"id":"\#(note)","pinned":\#(try world.pinned(note, reader)),"title":"edited on the device"}"#]
        for database in [reader, device] {
            let got = try world.rows(query, database, [note])
            #expect(got.sorted() == expected.sorted(), "\(database)")
            #expect(try world.rows("SELECT id FROM tasks WHERE id = ?", database, [task]).isEmpty)
        }
    }

    /// A capture timestamp for the server-owned `updated_at` column, which the server replaces.
    static let localTime = "2026-01-01T00:00:00.000Z"
}

/// One in-process reference server and the databases of the devices syncing with it, driven through the built
/// `seedkit` binary with the credential in `SEEDKIT_TEST_TOKEN`.
final class DeviceWorld {
    let server: RunningServer
    let directory: TemporaryDirectory

    init(rows: Int = 20) throws {
        server = try RunningServer(rows: rows)
        directory = try TemporaryDirectory(prefix: "seedkit-devices")
    }

    func database(_ name: String) -> String {
        directory.path(name)
    }

    /// Runs `seedkit arguments…`, killed at `point` when given.
    func run(_ arguments: [String], crashAt point: String? = nil) throws -> SeedkitProcess.Outcome {
        var environment = ["SEEDKIT_TEST_TOKEN": "secret-alice"]
        environment["SEEDKIT_CRASH_AT"] = point ?? ""
        return try SeedkitProcess.run(arguments, environment: environment)
    }

    /// Runs `seedkit arguments…`, killed at `point` when given, its engine clock shifted by `clockOffset`
    /// milliseconds when given (the `SEEDKIT_TEST_CLOCK_OFFSET_MS` test hook of `ClientClock.system`).
    func run(
        _ arguments: [String], crashAt point: String? = nil, clockOffset: Int64?
    ) throws -> SeedkitProcess.Outcome {
        guard let clockOffset else { return try run(arguments, crashAt: point) }
        return try SeedkitProcess.run(arguments, environment: [
            "SEEDKIT_TEST_TOKEN": "secret-alice", "SEEDKIT_CRASH_AT": point ?? "",
            "SEEDKIT_TEST_CLOCK_OFFSET_MS": String(clockOffset),
        ])
    }

    func sync(
        _ database: String, pageLimit: Int, crashAt point: String? = nil, json: Bool = false, extra: [String] = [],
        clockOffset: Int64? = nil
    ) throws -> SeedkitProcess.Outcome {
        try run(
            ["sync", "--server", server.baseURL, "--db", database, "--token-env", "SEEDKIT_TEST_TOKEN",
             "--page-limit", String(pageLimit)] + (json ? ["--json"] : []) + extra,
            crashAt: point, clockOffset: clockOffset)
    }

    /// After a sync died at `backoff.recorded` on a refused push: the durable retry record names the sealed batch
    /// with the server's `Retry-After` as its deadline, which is still ahead, so a plain restart would wait for
    /// it. A restart whose clock is an hour later (test hook) finds the deadline passed, waits for nothing,
    /// replays the same sealed batch, and its success clears the record.
    func expectRetryResumesSealedBatch(
        _ database: String, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let query = "SELECT resume_state, retry_classification, attempt_count, next_retry_at_ms, work_identity "
            + "FROM _synchro_backoff"
        let line = try #require(try rows(query, database).first, sourceLocation: sourceLocation)
        let record = try #require(try StrictJSONParser().parse(Array(line.utf8)).objectValue)
        let batch = try #require(
            try rows("SELECT batch_id FROM _synchro_push_batches WHERE state = 'pending'", database).first,
            sourceLocation: sourceLocation)
        #expect(record["resume_state"] == .string("pushing"), sourceLocation: sourceLocation)
        #expect(record["retry_classification"] == .string("http_503"), sourceLocation: sourceLocation)
        #expect(record["attempt_count"] == .number(JSONNumber(1)), sourceLocation: sourceLocation)
        let identity = try #require(record["work_identity"]?.stringValue, sourceLocation: sourceLocation)
        #expect(batch.contains(identity), "the record names the sealed batch", sourceLocation: sourceLocation)
        let deadline = try #require(record["next_retry_at_ms"]?.numberValue?.exactInt64, sourceLocation: sourceLocation)
        let now = Int64((Date().timeIntervalSince1970 * 1000).rounded(.down))
        #expect(deadline > now, "the deadline is ahead: a plain restart would wait", sourceLocation: sourceLocation)

        let resumed = try sync(database, pageLimit: 4, json: true, clockOffset: 3_600_000)
        try expectSuccess(resumed, sourceLocation: sourceLocation)
        let events = try resumed.lines.map {
            try StrictJSONParser().parse(Array($0.utf8)).objectValue ?? JSONObject([])
        }
        #expect(!events.contains { $0["event"] == .string("retry_scheduled") }, sourceLocation: sourceLocation)
        let mutations = events.last?["mutations"]?.objectValue
        #expect(mutations?["pushed"] == .number(JSONNumber(5)), sourceLocation: sourceLocation)
        #expect(mutations?["accepted"] == .number(JSONNumber(5)), sourceLocation: sourceLocation)
        #expect(try rows("SELECT count(*) AS n FROM _synchro_backoff", database) == [#"{"n":0}"#],
                sourceLocation: sourceLocation)
    }

    /// Publishes the next version of the served manifest with the operator credential: `addField` adds a
    /// nullable string field `(table ID, name)`, `removeField` removes `(table ID, field ID)`.
    func publish(
        transition: String, affected: [String]? = nil, addField: (String, String)? = nil,
        removeField: (String, String)? = nil
    ) throws {
        let current = try server.send("GET", "/sync/schema", body: [], headers: [])
        try #require(current.status == 200)
        let tables = (current.object["tables"]?.arrayValue ?? []).map { table -> JSONValue in
            guard let object = table.objectValue, let id = object["table_id"]?.stringValue else { return table }
            return .object(JSONObject(object.members.map { member -> JSONMember in
                guard member.key == "fields", var fields = member.value.arrayValue else { return member }
                if let (tableID, name) = addField, tableID == id {
                    fields.append(.object(JSONObject([
                        JSONMember("field_id", .string("fld_added_\(name)")), JSONMember("name", .string(name)),
                        JSONMember("type", .string("string")), JSONMember("nullable", .bool(true)),
                        JSONMember("writable", .bool(true)),
                    ])))
                }
                if let (tableID, field) = removeField, tableID == id {
                    fields.removeAll { $0.objectValue?["field_id"] == .string(field) }
                }
                return JSONMember("fields", .array(fields))
            }))
        }
        let body = try SuccessorManifest.publication(
            of: current.object, tables: tables, transition: transition, keepsCompatibilityFloor: false,
            affectedScopes: affected)
        let published = try server.send(
            "POST", "/operator/schema", body: body,
            headers: [
                ("Authorization", "Bearer \(RunningServer.operatorToken)"), ("Content-Type", "application/json"),
            ])
        try #require(published.status == 200, "publication failed: \(published.text)")
    }

    func sql(
        _ database: String, _ statement: [String], crashAt point: String? = nil
    ) throws -> SeedkitProcess.Outcome {
        try run(["sql", "--db", database] + statement, crashAt: point)
    }

    /// The JSON Lines rows of a query through `seedkit sql --json`.
    func rows(_ query: String, _ database: String, _ arguments: [String] = []) throws -> [String] {
        let run = try sql(database, ["--json", query] + arguments)
        try expectSuccess(run)
        return run.lines
    }

    func firstID(_ query: String, _ database: String) throws -> String {
        let line = try #require(try rows(query, database).first)
        return try #require(try StrictJSONParser().parse(line).objectValue?["id"]?.stringValue)
    }

    func pinned(_ id: String, _ database: String) throws -> Int64 {
        let line = try #require(try rows("SELECT pinned FROM notes WHERE id = ?", database, [id]).first)
        return try #require(try StrictJSONParser().parse(line).objectValue?["pinned"]?.numberValue?.exactInt64)
    }

    func inspect(_ database: String) throws -> StoreInspection {
        let run = try self.run(["inspect", "--db", database, "--json"])
        try expectSuccess(run)
        return try StoreInspection(json: try #require(run.lines.last))
    }

    func expectKilled(_ run: SeedkitProcess.Outcome, sourceLocation: SourceLocation = #_sourceLocation) throws {
        try #require(run.status == SIGKILL, "\(run.stderrText)", sourceLocation: sourceLocation)
    }

    /// `seedkit validate` finds nothing: integrity, metadata, every row digest and every verified checksum hold.
    func expectValid(_ database: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let run = try run(["validate", "--db", database])
        #expect(run.status == 0, "\(run.stdoutText)\(run.stderrText)", sourceLocation: sourceLocation)
    }

    func expectSuccess(_ run: SeedkitProcess.Outcome, sourceLocation: SourceLocation = #_sourceLocation) throws {
        try #require(run.status == 0, "\(run.stderrText)", sourceLocation: sourceLocation)
    }
}
