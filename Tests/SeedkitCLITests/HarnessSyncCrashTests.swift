import Foundation
import SynchroProtocol
import SynchroServer
import Testing
import _SeedkitTestSupport

/// The randomized crash harness of the client engine (docs/reliability.md; the per-boundary table is
/// `SyncProcessDeathTests`). Each trial makes random local writes through `seedkit sql` (some killed at the
/// capture boundaries), random server-side changes (catalog products and alice's notes written by the operator,
/// now and then a schema publication, a membership change or a corrupted checksum), schedules lost responses and
/// 429/503 refusals, then runs `seedkit sync --json` and kills it with SIGKILL — at a random named boundary
/// (`SEEDKIT_CRASH_AT=<point>:<n>`) or after a random number of its event lines. The killed store must validate
/// as it is; then a sync without faults must complete, after which: every authored mutation was accepted exactly
/// once (nothing pending or rejected, the accepted count equals the writes that committed), the device and an
/// independent reader hold exactly the modelled rows, every scope's stored digest matches the server's
/// (`seedkit validate --server`), and `PRAGMA integrity_check` is ok.
///
/// `SEEDKIT_CRASH_TRIALS` (default 8; `make crash` runs 200) and `SEEDKIT_CRASH_SEED` (printed) reproduce a run.
@Suite("Harness: randomized process death of the sync engine", .serialized)
struct HarnessSyncCrashTests {
    @Test("after every random kill a restart loses and duplicates nothing and converges to the server")
    func randomizedKills() throws {
        let configuration = HarnessConfiguration(trialsDefault: 8)
        let world = try HarnessSyncWorld()
        print("crash harness (sync): \(configuration.trials) trials, seed \(configuration.seed) (SEEDKIT_CRASH_SEED)")
        let clock = ContinuousClock()
        let started = clock.now
        for trial in 0..<configuration.trials {
            var random = SeededRandom(seed: configuration.seed, step: trial)
            do {
                try world.runTrial(trial, random: &random)
            } catch {
                Issue.record("trial \(trial) of seed \(configuration.seed): \(error)")
                world.keepStores()
                break
            }
        }
        world.keepStores()
        world.stats.seconds = (clock.now - started).harnessSeconds
        print(world.stats.report(title: "crash harness (sync), seed \(configuration.seed)"))
        #expect(world.stats.trials == configuration.trials)
        #expect(world.stats.kills.values.reduce(0, +) > 0, "some trials killed the engine")
    }
}

/// `SEEDKIT_CRASH_TRIALS` and `SEEDKIT_CRASH_SEED`.
struct HarnessConfiguration {
    let trials: Int
    let seed: UInt64

    init(trialsDefault: Int) {
        let environment = ProcessInfo.processInfo.environment
        trials = environment["SEEDKIT_CRASH_TRIALS"].flatMap { Int($0) }.map { max(1, $0) } ?? trialsDefault
        seed = environment["SEEDKIT_CRASH_SEED"].flatMap { UInt64($0) } ?? 20_260_301
    }
}

/// Counts of what a harness run did, printed as the figures docs/reliability.md quotes.
final class HarnessStats {
    var trials = 0
    /// Kills by boundary name (`export.page`, …) or by trigger (`line:<event>`, `file-event`).
    var kills: [String: Int] = [:]
    /// Runs whose chosen boundary was not reached (they completed).
    var notReached = 0
    /// Outcomes worth reporting that break no rule (for example `stale_evidence`), by name.
    var observations: [String: Int] = [:]
    var faults: [String: Int] = [:]
    var processes = 0
    var seconds = 0.0

    func report(title: String) -> String {
        let killLines = kills.sorted { $0.key < $1.key }.map { "  \($0.key): \($0.value)" }
        let faultLines = faults.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }
        let faultSummary = faultLines.isEmpty ? "" : "\nfaults injected: \(faultLines.joined(separator: ", "))"
        let noted = observations.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }
        let observed = noted.isEmpty ? "" : "\nobserved: \(noted.joined(separator: ", "))"
        return """
            \(title): \(trials) trials, \(kills.values.reduce(0, +)) kills, \(notReached) runs completed before \
            their kill point, \(processes) child processes, \
            \(String(format: "%.1f", seconds)) s
            kills by boundary or trigger:
            \(killLines.joined(separator: "\n"))\(faultSummary)\(observed)
            """
    }
}

extension Duration {
    var harnessSeconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}

/// The server, the device under test, the reader that observes the server as a fresh user device would, and the
/// model of every row the trials wrote.
final class HarnessSyncWorld {
    struct Row: Equatable {
        var title: String
        var flag: Int
        var deleted = false
    }

    let server: HarnessServer
    let directory: TemporaryDirectory
    let stats = HarnessStats()
    /// Device-authored notes and tasks, operator-written notes and products, by key.
    var notes: [String: Row] = [:]
    var tasks: [String: Row] = [:]
    var serverNotes: [String: Row] = [:]
    var products: [Int64: String] = [:]
    /// Fields the schema publications added to `tbl_notes` (operator rows must carry them).
    var addedNoteFields: [String] = []
    var device: String
    var deviceGeneration = 0
    /// Mutations committed on the current device store (each must be accepted exactly once).
    var authored = 0
    var clientID: String?
    /// Event lines of the last complete sync, the range a line trigger draws from.
    var lastSyncLines = 12
    let reader: String
    /// What the current trial did, printed as one line per trial so that a failure can be followed.
    var log: [String] = []

    static let token = ["SEEDKIT_TEST_TOKEN": "secret-alice"]
    static let localTime = "2026-01-01T00:00:00.000Z"
    static let serverTime = "2026-01-02T00:00:00.000000Z"
    /// Boundaries of `seedkit sync` (`SyncCrashPoint`, without the capture points, which `seedkit sql` reaches).
    static let syncPoints = [
        "connect.received", "connect.installed", "pull.received", "pull.page", "schema.prepared", "schema.applied",
        "push.sealed", "push.received", "push.reconciled", "push.renewed", "rebuild.started", "rebuild.received",
        "rebuild.page", "rebuild.final", "backoff.recorded",
    ]

    init() throws {
        server = try HarnessServer(rows: 30)
        directory = try TemporaryDirectory(prefix: "seedkit-harness-sync")
        device = directory.path("device-0.db")
        reader = directory.path("reader.db")
    }

    // MARK: - One trial

    /// What the trial set up that decides which boundaries its sync can reach.
    struct Plan {
        var writes = 0
        var rebuilds = false
        var schema = false
        var fault = false
        var renewal = false
    }

    func runTrial(_ trial: Int, random: inout SeededRandom) throws {
        stats.trials += 1
        log = []
        defer { print("trial \(trial): \(log.joined(separator: ", "))") }
        var plan = Plan()
        if trial == 0 || random.chance(0.12) { try freshDevice() }
        plan.rebuilds = authored == 0 && clientID == nil
        if clientID != nil {
            plan.writes = try localWrites(trial, random: &random)
        }
        if random.chance(0.5) { try serverChanges(trial, random: &random) }
        plan = try faults(plan, random: &random)
        try killedSync(plan, random: &random)
        try recoverAndCheck(plan)
    }

    /// Starts over with a new device store (a new client ID); the old one is removed.
    func freshDevice() throws {
        for suffix in ["", "-wal", "-shm", "-journal"] { try? FileManager.default.removeItem(atPath: device + suffix) }
        deviceGeneration += 1
        device = directory.path("device-\(deviceGeneration).db")
        log.append("fresh device")
        authored = 0
        clientID = nil
    }

    /// One to four writes, each to a different row, some killed at a capture boundary.
    func localWrites(_ trial: Int, random: inout SeededRandom) throws -> Int {
        var touched: Set<String> = []
        var committed = 0
        for index in 0..<random.inRange(0...4) {
            guard let write = chooseWrite(trial, index, touched: touched, random: &random) else { continue }
            touched.insert(write.key)
            var crash: String?
            if random.chance(0.15) { crash = random.chance(0.5) ? "capture.before_commit" : "capture.committed" }
            log.append("\(write.kind) \(write.key)" + (crash.map { " killed at \($0)" } ?? ""))
            let run = try sql([write.sql] + write.arguments, crashAt: crash)
            if let crash {
                try expect(run.killed, "a write killed at \(crash) exited \(run.status): \(run.stderrText)")
                stats.kills[crash, default: 0] += 1
                try expectValid(device, after: crash)
                if try writeIsVisible(write) {
                    try expect(crash == "capture.committed", "a write killed before its commit is visible")
                    apply(write)
                    committed += 1
                } else {
                    try expect(crash == "capture.before_commit", "a write killed after its commit is not visible")
                    if random.chance(0.5) {
                        try expectSuccess(try sql([write.sql] + write.arguments), "the repeated write")
                        apply(write)
                        committed += 1
                    }
                }
            } else {
                try expectSuccess(run, "a local write")
                apply(write)
                committed += 1
            }
        }
        authored += committed
        return committed
    }

    struct Write {
        enum Kind { case insertNote, insertTask, updateNote, updateTask, deleteNote, deleteTask }
        let kind: Kind
        let key: String
        let row: Row
        let sql: String
        let arguments: [String]
    }

    func chooseWrite(_ trial: Int, _ index: Int, touched: Set<String>, random: inout SeededRandom) -> Write? {
        let title = "t\(trial)-\(index)-\(random.below(1000))"
        let liveNotes = notes.filter { !$0.value.deleted && !touched.contains($0.key) }.keys.sorted()
        let liveTasks = tasks.filter { !$0.value.deleted && !touched.contains($0.key) }.keys.sorted()
        switch random.below(6) {
        case 0, 1:
            let key = "hn\(trial)-\(index)", pinned = random.below(2)
            return Write(
                kind: .insertNote, key: key, row: Row(title: title, flag: pinned),
                sql: "INSERT INTO notes (id, owner_id, title, pinned, updated_at) VALUES (?, 'alice', ?, ?, ?)",
                arguments: [key, title, String(pinned), Self.localTime])
        case 2:
            let key = "ht\(trial)-\(index)"
            return Write(
                kind: .insertTask, key: key, row: Row(title: title, flag: 0),
                sql: "INSERT INTO tasks (id, owner_id, title, done, position) VALUES (?, 'alice', ?, 0, ?)",
                arguments: [key, title, String(index + 1)])
        case 3:
            guard let key = random.pick(liveNotes), let old = notes[key] else { return nil }
            return Write(
                kind: .updateNote, key: key, row: Row(title: title, flag: old.flag),
                sql: "UPDATE notes SET title = ? WHERE id = ?", arguments: [title, key])
        case 4:
            guard let key = random.pick(liveTasks), let old = tasks[key] else { return nil }
            let done = 1 - old.flag
            if random.chance(0.5) {
                return Write(
                    kind: .deleteTask, key: key, row: Row(title: old.title, flag: old.flag, deleted: true),
                    sql: "DELETE FROM tasks WHERE id = ?", arguments: [key])
            }
            return Write(
                kind: .updateTask, key: key, row: Row(title: title, flag: done),
                sql: "UPDATE tasks SET title = ?, done = ? WHERE id = ?", arguments: [title, String(done), key])
        default:
            guard let key = random.pick(liveNotes), let old = notes[key] else { return nil }
            return Write(
                kind: .deleteNote, key: key, row: Row(title: old.title, flag: old.flag, deleted: true),
                sql: "DELETE FROM notes WHERE id = ?", arguments: [key])
        }
    }

    func apply(_ write: Write) {
        switch write.kind {
        case .insertNote, .updateNote, .deleteNote: notes[write.key] = write.row
        case .insertTask, .updateTask, .deleteTask: tasks[write.key] = write.row
        }
    }

    /// Whether the device shows the write's effect (after a kill, to learn whether it committed).
    func writeIsVisible(_ write: Write) throws -> Bool {
        let (table, column) = switch write.kind {
        case .insertNote, .updateNote, .deleteNote: ("notes", "pinned")
        case .insertTask, .updateTask, .deleteTask: ("tasks", "done")
        }
        let deletedFilter = table == "notes" ? " AND deleted_at IS NULL" : ""
        let rows = try rows("SELECT title, \(column) AS flag FROM \(table) WHERE id = ?\(deletedFilter)", [write.key])
        if write.row.deleted { return rows.isEmpty }
        return rows == [#"{"flag":\#(write.row.flag),"title":"\#(write.row.title)"}"#]
    }

    /// One to three operator writes: new or renamed catalog products, new or renamed notes of alice.
    func serverChanges(_ trial: Int, random: inout SeededRandom) throws {
        for index in 0..<random.inRange(1...3) {
            let title = "s\(trial)-\(index)"
            if random.chance(0.5) {
                let id = random.chance(0.4) ? (random.pick(products.keys.sorted()) ?? 5_000_000) : 5_000_000
                    + Int64(trial * 10 + index)
                try server.engine.operatorWrite(
                    table: "tbl_products", pk: .string(String(id)), row: Self.productRow(id: id, title: title))
                products[id] = title
            } else {
                let key = random.chance(0.4) ? (random.pick(serverNotes.keys.sorted()) ?? "srv-\(trial)-\(index)")
                    : "srv-\(trial)-\(index)"
                try server.engine.operatorWrite(
                    table: "tbl_notes", pk: .string(key), row: noteRow(id: key, title: title))
                serverNotes[key] = Row(title: title, flag: 0)
            }
            stats.faults["operator_write", default: 0] += 1
            log.append("operator write")
        }
    }

    static func productRow(id: Int64, title: String) -> JSONValue {
        .object(JSONObject([
            "fld_product_id": .string(String(id)), "fld_product_sku": .string("SKU-H\(id)"),
            "fld_product_title": .string(title), "fld_product_price": .string("1.25"),
            "fld_product_stock": .number(JSONNumber(3)), "fld_product_rating": .null,
            "fld_product_active": .bool(true), "fld_product_release": .null, "fld_product_attrs": .null,
            "fld_product_thumb": .null, "fld_product_category": .number(JSONNumber(1)),
            "fld_product_updated_at": .string(serverTime),
        ]))
    }

    func noteRow(id: String, title: String) -> JSONValue {
        .object(JSONObject([
            JSONMember("fld_note_id", .string(id)), JSONMember("fld_note_owner", .string("alice")),
            JSONMember("fld_note_title", .string(title)), JSONMember("fld_note_body", .null),
            JSONMember("fld_note_pinned", .bool(false)), JSONMember("fld_note_score", .null),
            JSONMember("fld_note_updated_at", .string(Self.serverTime)), JSONMember("fld_note_deleted_at", .null),
        ] + addedNoteFields.map { JSONMember($0, .null) }))
    }

    /// Schedules the trial's server faults and records what they make reachable.
    func faults(_ plan: Plan, random: inout SeededRandom) throws -> Plan {
        var plan = plan
        if random.chance(0.3) {
            let routes = ["/sync/connect", "/sync/pull"] + (plan.writes > 0 ? ["/sync/push"] : [])
                + (plan.rebuilds ? ["/sync/rebuild"] : [])
            let route = random.pick(routes) ?? "/sync/pull"
            if random.chance(0.5) {
                try server.engine.inject(.loseResponse(route: route, count: 1))
                stats.faults["lose_response", default: 0] += 1
                log.append("lose_response \(route)")
            } else {
                let status = random.chance(0.5) ? 503 : 429
                try server.engine.inject(.rejectRequests(route: route, count: 1, status: status))
                stats.faults["reject_\(status)", default: 0] += 1
                log.append("reject \(status) \(route)")
            }
            plan.fault = true
        }
        if clientID != nil && random.chance(0.06) {
            try server.engine.inject(.changeMembership)
            stats.faults["change_membership", default: 0] += 1
            log.append("change_membership")
            plan.rebuilds = true
        }
        if clientID != nil && random.chance(0.06) {
            try server.engine.inject(.corruptChecksum(scope: random.chance(0.5) ? "catalog" : "user:alice"))
            stats.faults["corrupt_checksum", default: 0] += 1
            log.append("corrupt_checksum")
            plan.rebuilds = true
        }
        if let clientID, plan.writes > 0, random.chance(0.08) {
            try server.engine.inject(.expireClientGeneration(user: "alice", client: clientID))
            stats.faults["expire_client_generation", default: 0] += 1
            log.append("expire_client_generation")
            plan.renewal = true
        }
        if clientID != nil && addedNoteFields.count < 6 && random.chance(0.05) {
            let field = "fld_note_harness_\(addedNoteFields.count + 1)"
            let classThree = random.chance(0.5)
            try server.publishNoteField(field, name: "harness_\(addedNoteFields.count + 1)", classThree: classThree)
            addedNoteFields.append(field)
            stats.faults[classThree ? "schema_publication_class_3" : "schema_publication_class_2", default: 0] += 1
            log.append("schema publication (class \(classThree ? 3 : 2))")
            plan.schema = true
            plan.rebuilds = plan.rebuilds || classThree
        }
        return plan
    }

    /// The sync that dies: at a boundary the plan can reach (occurrence 1–3), or after a random event line.
    func killedSync(_ plan: Plan, random: inout SeededRandom) throws {
        let pageLimit = random.pick([5, 8, 20, 100]) ?? 20
        var point: String?
        var trigger = HarnessTrigger.none
        if random.chance(0.65) {
            let reachable = Self.syncPoints.filter { point in
                switch point {
                case "schema.prepared", "schema.applied": plan.schema
                case "push.sealed", "push.received", "push.reconciled": plan.writes > 0
                case "push.renewed": plan.renewal
                case "rebuild.started", "rebuild.received", "rebuild.page", "rebuild.final": plan.rebuilds
                case "backoff.recorded": plan.fault
                default: true
                }
            }
            // Boundaries that only this trial's situation reaches are preferred, so that each gets its kills.
            let rare = reachable.filter {
                (plan.schema && $0.hasPrefix("schema.")) || (plan.fault && $0 == "backoff.recorded")
                    || (plan.renewal && $0 == "push.renewed")
            }
            let name = (random.chance(0.6) ? random.pick(rare) : nil) ?? random.pick(reachable) ?? "pull.page"
            let repeats = name.hasPrefix("pull.") || name.hasPrefix("rebuild.") ? random.inRange(1...3) : 1
            point = repeats == 1 ? name : "\(name):\(repeats)"
        } else {
            trigger = .lines(random.inRange(1...max(2, lastSyncLines)))
        }
        let run = try sync(device, pageLimit: pageLimit, crashAt: point, trigger: trigger)
        log.append("sync (page limit \(pageLimit)) to be killed at \(point ?? "\(trigger)"): "
            + (run.killed ? "killed" : "completed"))
        if run.killed {
            let label = point.map { String($0.prefix { $0 != ":" }) } ?? "line:" + Self.lastEvent(run)
            stats.kills[label, default: 0] += 1
            try expectValid(device, after: label)
            if label == "push.sealed", let clientID, random.chance(0.6) {
                try renewalKill(clientID: clientID)
            }
        } else {
            try expectSuccess(run, "a sync whose kill point was not reached")
            stats.notReached += 1
            lastSyncLines = max(2, run.lines.count)
        }
    }

    /// A sealed batch whose generation the server then expires is renewed by the next sync, which dies right
    /// after the successor committed.
    func renewalKill(clientID: String) throws {
        try server.engine.inject(.expireClientGeneration(user: "alice", client: clientID))
        stats.faults["expire_client_generation", default: 0] += 1
        let run = try sync(device, pageLimit: 20, crashAt: "push.renewed")
        log.append("expire_client_generation, sync to be killed at push.renewed: "
            + (run.killed ? "killed" : "completed"))
        if run.killed {
            stats.kills["push.renewed", default: 0] += 1
            try expectValid(device, after: "push.renewed")
        } else {
            try expectSuccess(run, "a sync whose kill point was not reached")
            stats.notReached += 1
        }
    }

    /// The event a line-triggered kill followed (`phase_started:push`, `page_applied:pull`, …).
    static func lastEvent(_ run: HarnessOutcome) -> String {
        guard let line = run.lines.last, let object = try? StrictJSONParser().parse(line).objectValue else {
            return "none"
        }
        let event = object["event"]?.stringValue ?? "?"
        return object["phase"]?.stringValue.map { "\(event):\($0)" } ?? event
    }

    /// The restart and every check of the trial.
    func recoverAndCheck(_ plan: Plan) throws {
        let recovery = try sync(device, pageLimit: 20, until: true)
        try expectSuccess(recovery, "the sync after the kill")
        lastSyncLines = max(2, recovery.lines.count)
        let reading = try sync(reader, pageLimit: 50, until: true)
        try expectSuccess(reading, "the reader's sync")

        let inspection = try inspect()
        clientID = inspection.clientID
        try expect(inspection.pending == 0, "\(inspection.pending) mutations still pending")
        try expect(inspection.rejections == 0, "\(inspection.rejections) mutations rejected (a duplicate insert?)")
        try expect(!inspection.blocked, "the store is blocked")
        try expect(inspection.accepted == Int64(authored),
                   "\(inspection.accepted) mutations accepted, \(authored) authored on this device")

        let validation = try child(
            ["validate", "--db", device, "--server", server.baseURL, "--token-env", "SEEDKIT_TEST_TOKEN", "--json"])
        try expectSuccess(validation, "validate --server")
        let report = try StrictJSONParser().parse(validation.lines.last ?? "").objectValue
        let scopes = report?["scopes"]?.arrayValue ?? []
        try expect(scopes.count == 2, "\(scopes.count) scopes")
        for scope in scopes.compactMap(\.objectValue) {
            try expect(scope["digest"] == .string("verified") && scope["server"] == .string("matches"),
                       "scope \(scope["scope_id"]?.stringValue ?? "?"): digest \(scope["digest"] ?? .null), "
                           + "server \(scope["server"] ?? .null)")
        }
        let integrity = try rows("PRAGMA integrity_check", [])
        try expect(integrity == [#"{"integrity_check":"ok"}"#], "integrity_check: \(integrity)")

        let expected = expectedRows()
        for database in [device, reader] {
            let got = Set(try rows(Self.rowsQuery, [], database: database))
            let missing = expected.subtracting(got).sorted().prefix(3)
            let extra = got.subtracting(expected).sorted().prefix(3)
            try expect(got == expected, "\(database == device ? "device" : "reader") rows differ from the model: "
                + "missing \(missing), extra \(extra)")
        }
    }

    static let rowsQuery = """
        SELECT 'n' AS k, id, title, pinned AS v FROM notes \
        WHERE (id LIKE 'hn%' OR id LIKE 'srv-%') AND deleted_at IS NULL \
        UNION ALL SELECT 't', id, title, done FROM tasks WHERE id LIKE 'ht%' \
        UNION ALL SELECT 'p', CAST(id AS TEXT), title, 0 FROM products WHERE id >= 5000000
        """

    func expectedRows() -> Set<String> {
        func line(_ kind: String, _ id: String, _ row: Row) -> String {
            #"{"id":"\#(id)","k":"\#(kind)","title":"\#(row.title)","v":\#(row.flag)}"#
        }
        var lines = Set<String>()
        for (id, row) in notes where !row.deleted { lines.insert(line("n", id, row)) }
        for (id, row) in serverNotes { lines.insert(line("n", id, row)) }
        for (id, row) in tasks where !row.deleted { lines.insert(line("t", id, row)) }
        for (id, title) in products { lines.insert(line("p", String(id), Row(title: title, flag: 0))) }
        return lines
    }

    /// Copies the device and reader stores to `SEEDKIT_CRASH_KEEP` (when set) for a post-mortem.
    func keepStores() {
        guard let keep = ProcessInfo.processInfo.environment["SEEDKIT_CRASH_KEEP"] else { return }
        try? FileManager.default.createDirectory(atPath: keep, withIntermediateDirectories: true)
        for path in [device, reader] {
            for suffix in ["", "-wal", "-shm", "-journal"] where FileManager.default.fileExists(atPath: path + suffix) {
                let target = keep + "/" + (path as NSString).lastPathComponent + suffix
                try? FileManager.default.removeItem(atPath: target)
                try? FileManager.default.copyItem(atPath: path + suffix, toPath: target)
            }
        }
        print("crash harness: stores kept in \(keep)")
    }

    // MARK: - Children

    func child(_ arguments: [String], crashAt point: String? = nil, trigger: HarnessTrigger = .none) throws
        -> HarnessOutcome
    {
        stats.processes += 1
        var environment = Self.token
        if let point { environment["SEEDKIT_CRASH_AT"] = point }
        return try HarnessChild.run(arguments, environment: environment, trigger: trigger)
    }

    func sync(
        _ database: String, pageLimit: Int, crashAt point: String? = nil, trigger: HarnessTrigger = .none,
        until: Bool = false
    ) throws -> HarnessOutcome {
        try child(
            ["sync", "--server", server.baseURL, "--db", database, "--token-env", "SEEDKIT_TEST_TOKEN",
             "--page-limit", String(pageLimit), "--json"] + (until ? ["--until-current"] : []),
            crashAt: point, trigger: trigger)
    }

    func sql(_ statement: [String], crashAt point: String? = nil) throws -> HarnessOutcome {
        try child(["sql", "--db", device, "--"] + statement, crashAt: point)
    }

    func rows(_ query: String, _ arguments: [String], database: String? = nil) throws -> [String] {
        let run = try child(["sql", "--db", database ?? device, "--json", "--", query] + arguments)
        try expectSuccess(run, "a query")
        return run.lines
    }

    func inspect() throws -> StoreInspection {
        let run = try child(["inspect", "--db", device, "--json"])
        try expectSuccess(run, "inspect")
        return try StoreInspection(json: run.lines.last ?? "")
    }

    /// `seedkit validate` (offline) holds on the store as the kill left it: every committed state is consistent.
    func expectValid(_ database: String, after point: String) throws {
        let run = try child(["validate", "--db", database, "--json"])
        if run.succeeded { return }
        throw HarnessError("the store killed at \(point) does not validate: \(run.stdoutText)\(run.stderrText)")
    }

    func expectSuccess(_ run: HarnessOutcome, _ what: String) throws {
        try expect(run.succeeded, "\(what) exited \(run.signaled ? "by signal " : "")\(run.status): \(run.stderrText)")
    }

    func expect(_ condition: Bool, _ message: @autoclosure () -> String) throws {
        guard condition else { throw HarnessError(message()) }
    }
}
