import Foundation
import SQLiteKit
import Synchronization
import SynchroClient
import SynchroProtocol
import SynchroServer
import Testing
import _SeedkitTestSupport
import SynchroStore

/// Seeded mutation fuzzing of the client's response validation through its public entry point
/// (docs/reliability.md): two real sync cycles against a reference server are recorded — a fresh store's first
/// cycle (connect, rebuilds, pull) and a cycle with local writes and server-side changes (connect, push, pull) —
/// together with the store file each started from. Each step replays one recording from a copy of its store, with
/// one reply's body (sometimes its status or `Retry-After`) mutated. The cycle must finish or fail with a typed
/// ``SyncCycleError``, and whatever was committed must leave a store that ``StoreValidator`` finds consistent:
/// no row, cursor or checksum that the replies did not justify.
@Suite("Fuzz: client response validation", .serialized)
struct FuzzSyncResponsesTests {
    @Test("replaying the unmutated recordings reproduces the cycles exactly")
    func replayIsFaithful() throws {
        for recording in try FuzzSyncRecording.recordings.get() {
            let work = try TemporaryDirectory(prefix: "seedkit-fuzz-replay")
            let run = try recording.replay(in: work, mutated: nil)
            #expect(run.outcome == "completed", "\(recording.name): \(run.outcome)")
            #expect(run.diverged == 0, "\(recording.name): a request differed from the recorded one")
            #expect(run.findings.isEmpty, "\(recording.name): \(run.findings)")
        }
    }

    @Test("a mutated reply ends the cycle with a typed error or a consistent store, never a crash")
    func mutatedReplies() throws {
        let recordings = try FuzzSyncRecording.recordings.get()
        let bodies = recordings.flatMap { $0.exchanges.map(\.reply.body) }
        let mutator = FuzzMutator(corpus: bodies)
        let work = try TemporaryDirectory(prefix: "seedkit-fuzz-responses")
        // A step's input is its choice of recording and exchange, then the mutated reply.
        let report = FuzzCampaign(target: "client_response_validation").run { random in
            let which = random.below(recordings.count)
            let index = random.below(recordings[which].exchanges.count)
            let reply = recordings[which].exchanges[index].reply
            let status = random.chance(0.1) ? random.pick([400, 409, 422, 429, 500, 503]) ?? 200 : reply.status
            // A third of the steps change one row value to an edge of its type and re-sign the row, so that the
            // value passes the row digest check and reaches the appliers and the store.
            let resigned = random.chance(0.33) ? FuzzRowResigner.shared?.resign(reply.body, using: &random) : nil
            let body = resigned ?? mutator.mutate(reply.body, using: &random).bytes
            let retryAfter = random.chance(0.05) ? random.pick(["-1", "1e9", "abc", "0.0000001", ""]) ?? "" : nil
            return FuzzSyncRecording.Mutation(
                recording: which, exchange: index, status: status, retryAfter: retryAfter, body: body
            ).encoded
        } execute: { input throws(FuzzCampaign.Violation) in
            guard let mutation = FuzzSyncRecording.Mutation(encoded: input) else { return "undecodable" }
            let run: FuzzSyncRecording.Run
            do {
                run = try recordings[mutation.recording].replay(in: work, mutated: mutation)
            } catch {
                throw FuzzCampaign.Violation("the replay could not run: \(error)")
            }
            guard run.findings.isEmpty else {
                throw FuzzCampaign.Violation(
                    "the store is inconsistent after \(run.outcome): \(run.findings.joined(separator: ", "))")
            }
            return run.outcome
        }
        #expect(report.executions > 0)
        #expect(report.outcomes.keys.contains { $0 != "completed" }, "some mutations are refused")
        #expect(report.findings.isEmpty, "\(report.findings.prefix(3))")
    }
}

/// One recorded cycle: the store file it started from, the UUID draw count at that point, and every exchange.
struct FuzzSyncRecording: Sendable {
    struct Exchange: Sendable {
        let path: String
        let request: [UInt8]
        let reply: SyncReply
    }

    /// Which reply of which recording is replaced, and by what.
    struct Mutation: Sendable {
        let recording: Int
        let exchange: Int
        let status: Int
        let retryAfter: String?
        let body: [UInt8]

        /// `recording, exchange, status (2 bytes), retry-after length, retry-after, body`.
        var encoded: [UInt8] {
            let after = Array((retryAfter ?? "").utf8.prefix(200))
            return [UInt8(recording), UInt8(exchange), UInt8(status >> 8), UInt8(status & 0xFF),
                    retryAfter == nil ? 0xFF : UInt8(after.count)] + after + body
        }

        init(recording: Int, exchange: Int, status: Int, retryAfter: String?, body: [UInt8]) {
            (self.recording, self.exchange, self.status, self.retryAfter, self.body) =
                (recording, exchange, status, retryAfter, body)
        }

        init?(encoded: [UInt8]) {
            guard encoded.count >= 5 else { return nil }
            let length = encoded[4] == 0xFF ? 0 : Int(encoded[4])
            guard encoded.count >= 5 + length else { return nil }
            recording = Int(encoded[0])
            exchange = Int(encoded[1])
            status = Int(encoded[2]) << 8 | Int(encoded[3])
            retryAfter = encoded[4] == 0xFF ? nil : String(decoding: encoded[5..<(5 + length)], as: UTF8.self)
            body = Array(encoded[(5 + length)...])
        }
    }

    /// What one replay did.
    struct Run {
        /// `completed`, or the class of the cycle's typed error.
        let outcome: String
        /// Requests that matched no recorded request (the engine took another path after a mutated reply).
        let diverged: Int
        /// `StoreValidator` findings on the store afterwards.
        let findings: [String]
    }

    let name: String
    let template: [UInt8]
    let uuidStart: Int
    let exchanges: [Exchange]

    static let clientID = "fuzz-device-1"
    static let clock = ClientClock(unixMilliseconds: { 1_700_000_000_123 })

    static let recordings: Result<[FuzzSyncRecording], RecordingFailure> = {
        do {
            return .success(try record())
        } catch {
            return .failure(RecordingFailure(description: "\(error)"))
        }
    }()

    struct RecordingFailure: Error, CustomStringConvertible {
        let description: String
    }

    /// Records a fresh store's first cycle, then a cycle with local and server-side changes (page limit 12).
    private static func record() throws -> [FuzzSyncRecording] {
        let server = try RunningServer(rows: 30)
        let directory = try TemporaryDirectory(prefix: "seedkit-fuzz-record")
        let path = directory.path("device.db")
        let uuids = FuzzCountingUUIDs(start: 0)
        func open() throws -> ClientStore {
            try ClientStore(configuration: ClientStoreConfiguration(
                path: path, clientID: clientID, uuids: UUIDSource { uuids.next() }, clock: clock))
        }
        func snapshot() throws -> [UInt8] {
            Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        }
        func cycle(_ name: String) throws -> FuzzSyncRecording {
            let template = try snapshot()
            let start = uuids.count
            let store = try open()
            defer { store.close() }
            let transport = FuzzRecordingTransport(server: server)
            let context = SyncContext(store: store, transport: transport, pageLimit: 12)
            _ = try SyncCycle(context: context, delay: { _ in }).run()
            return FuzzSyncRecording(name: name, template: template, uuidStart: start, exchanges: transport.exchanges)
        }
        try open().close()
        let first = try cycle("first cycle")

        let store = try open()
        _ = try store.execute(
            "INSERT INTO notes (id, owner_id, title, pinned, updated_at) "
                + "VALUES ('fz-1', 'alice', 'one', 0, '2026-01-01T00:00:00.000Z')")
        _ = try store.execute(
            "INSERT INTO tasks (id, owner_id, title, done, position) VALUES ('fz-t1', 'alice', 'task', 1, 3)")
        _ = try store.execute("UPDATE notes SET title = 'edited', pinned = 1 WHERE id = (SELECT min(id) FROM notes)")
        _ = try store.execute("DELETE FROM tasks WHERE id = (SELECT min(id) FROM tasks WHERE id <> 'fz-t1')")
        store.close()
        try server.engine.operatorWrite(table: "tbl_notes", pk: .string("fz-server-1"), row: .object(JSONObject([
            "fld_note_id": .string("fz-server-1"), "fld_note_owner": .string("alice"),
            "fld_note_title": .string("from the server"), "fld_note_body": .null, "fld_note_pinned": .bool(false),
            "fld_note_score": .string("-3.5"), "fld_note_updated_at": .string("2026-01-01T00:00:00.000000Z"),
            "fld_note_deleted_at": .null,
        ])))
        let second = try cycle("cycle with writes")
        return [first, second]
    }

    /// Replays the recording on a fresh copy of its store, with `mutated` replacing one reply.
    func replay(in work: TemporaryDirectory, mutated: Mutation?) throws -> Run {
        let path = work.path("replay.db")
        for suffix in ["", "-wal", "-shm", "-journal"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        try Data(template).write(to: URL(fileURLWithPath: path))
        let uuids = FuzzCountingUUIDs(start: uuidStart)
        let store = try ClientStore(configuration: ClientStoreConfiguration(
            path: path, clientID: Self.clientID, uuids: UUIDSource { uuids.next() }, clock: Self.clock))
        let transport = FuzzReplayTransport(exchanges: exchanges, mutated: mutated)
        let context = SyncContext(store: store, transport: transport, pageLimit: 12)
        let configuration = SyncCycle.Configuration(retry: SyncRetryPolicy(maxAttempts: 2))
        let outcome: String
        do throws(SyncCycleError) {
            _ = try SyncCycle(context: context, configuration: configuration, delay: { _ in }).run()
            outcome = "completed"
        } catch {
            outcome = Self.classify(error)
        }
        store.close()
        let validation = try StoreValidator(path: path).validate()
        return Run(outcome: outcome, diverged: transport.diverged, findings: validation.findings.map(\.rule))
    }

    /// A stable class name for a cycle failure: the case and, for exchange failures, the rule.
    static func classify(_ error: SyncCycleError) -> String {
        switch error {
        case .sync(let phase, let failure): "\(phase.rawValue).\(failure.rule)"
        case .push(let failure): "push.\(Mirror(reflecting: failure).children.first?.label ?? "\(failure)")"
        default: Mirror(reflecting: error).children.first?.label ?? "\(error)"
        }
    }
}

/// Draws canonical UUIDs from a counter, so a replay from the same start sends the recorded request bytes.
final class FuzzCountingUUIDs: Sendable {
    private let counter: Mutex<Int>

    init(start: Int) {
        counter = Mutex(start)
    }

    var count: Int { counter.withLock { $0 } }

    func next() -> String {
        let value = counter.withLock { value -> Int in
            value += 1
            return value
        }
        let suffix = String(value, radix: 16)
        return "00000000-0000-4000-8000-" + String(repeating: "0", count: max(0, 12 - suffix.count)) + suffix
    }
}

/// Forwards to the server as alice and records every exchange with its headers.
final class FuzzRecordingTransport: SyncTransport, Sendable {
    let server: RunningServer
    private let recorded = Mutex<[FuzzSyncRecording.Exchange]>([])

    init(server: RunningServer) {
        self.server = server
    }

    var exchanges: [FuzzSyncRecording.Exchange] { recorded.withLock { $0 } }

    func post(path: String, body: [UInt8]) throws -> SyncReply {
        let reply = try server.post(path, bytes: body, as: "alice")
        let result = SyncReply(
            status: reply.status, headers: reply.headers.map { (name: $0.0, value: $0.1) }, body: reply.body)
        recorded.withLock { $0.append(.init(path: path, request: body, reply: result)) }
        return result
    }
}

/// Answers each request with the recorded reply to the same request; the mutated exchange's first answer is
/// replaced. A request the recording does not hold is lost (it throws), as a dropped connection would be.
final class FuzzReplayTransport: SyncTransport, Sendable {
    struct Unrecorded: Error {}

    private let exchanges: [FuzzSyncRecording.Exchange]
    private let mutated: FuzzSyncRecording.Mutation?
    private let state = Mutex<(served: Set<Int>, diverged: Int)>(([], 0))

    init(exchanges: [FuzzSyncRecording.Exchange], mutated: FuzzSyncRecording.Mutation?) {
        self.exchanges = exchanges
        self.mutated = mutated
    }

    var diverged: Int { state.withLock { $0.diverged } }

    func post(path: String, body: [UInt8]) throws -> SyncReply {
        let matches = exchanges.indices.filter { exchanges[$0].path == path && exchanges[$0].request == body }
        let index: Int? = state.withLock { state in
            guard let fresh = matches.first(where: { !state.served.contains($0) }) ?? matches.first else {
                state.diverged += 1
                return nil
            }
            let first = state.served.insert(fresh).inserted
            return first ? fresh : -1 - fresh
        }
        guard let index else { throw Unrecorded() }
        let exchange = exchanges[index < 0 ? -1 - index : index]
        guard index >= 0, let mutated, mutated.exchange == index else { return exchange.reply }
        var headers = exchange.reply.headers.filter { $0.name.lowercased() != "retry-after" }
        if let after = mutated.retryAfter { headers.append((name: "Retry-After", value: after)) }
        return SyncReply(status: mutated.status, headers: headers, body: mutated.body)
    }
}

/// Replaces one field of one row of a pull or rebuild page by a valid value on an edge of its type (extreme
/// integers, decimals and floats, the first and last dates, empty, huge and unusual strings and bytes, null where
/// allowed) and recomputes the row's checksum with the demo manifest, as a server holding that value would send it.
struct FuzzRowResigner: Sendable {
    let manifest: SchemaManifest
    /// `table ID → [(field ID, type, nullable)]`.
    let fields: [String: [(id: String, type: String, nullable: Bool)]]

    static let shared: FuzzRowResigner? = {
        let url = RepositoryLayout.root.appendingPathComponent("seeds/demo/manifest.json")
        guard let bytes = try? Array(Data(contentsOf: url)), let manifest = try? SchemaManifest(bytes: bytes),
              let json = try? StrictJSONParser().parse(bytes)
        else { return nil }
        var fields: [String: [(id: String, type: String, nullable: Bool)]] = [:]
        for table in json.objectValue?["tables"]?.arrayValue ?? [] {
            guard let table = table.objectValue, let id = table["table_id"]?.stringValue else { continue }
            fields[id] = (table["fields"]?.arrayValue ?? []).compactMap { field in
                guard let field = field.objectValue, let fieldID = field["field_id"]?.stringValue,
                      let type = field["type"]?.stringValue
                else { return nil }
                return (fieldID, type, field["nullable"]?.boolValue ?? false)
            }
        }
        return FuzzRowResigner(manifest: manifest, fields: fields)
    }()

    func resign(_ body: [UInt8], using random: inout SeededRandom) -> [UInt8]? {
        guard let json = try? StrictJSONParser().parse(body), let object = json.objectValue else { return nil }
        let listName = object["records"] != nil ? "records" : "changes"
        guard var list = object[listName]?.arrayValue else { return nil }
        let candidates = list.indices.filter { list[$0].objectValue?["row_checksum"] != nil }
        guard let index = random.pick(candidates), let record = list[index].objectValue,
              let table = record["table"]?.stringValue, let pk = record["pk"]?.objectValue?.members.first,
              let row = record["row"]?.objectValue, let version = record["server_version"]?.stringValue,
              let field = random.pick((fields[table] ?? []).filter { $0.id != pk.key })
        else { return nil }
        let value = Self.edgeValue(type: field.type, nullable: field.nullable, using: &random)
        let changed = JSONValue.object(JSONObject(row.members.map {
            $0.key == field.id ? JSONMember($0.key, value) : $0
        }))
        var digester = RowDigester(manifest: manifest)
        guard let digest = try? digester.digest(
                tableID: table, primaryKey: pk.value, row: changed, serverVersion: version),
              let checksum = try? Checksum(digest: digest.digest)
        else { return nil }
        list[index] = .object(JSONObject(record.members.map { member in
            switch member.key {
            case "row": JSONMember("row", changed)
            case "row_checksum": JSONMember("row_checksum", checksum.json)
            default: member
            }
        }))
        return FuzzJSONText.bytes(.object(JSONObject(object.members.map {
            $0.key == listName ? JSONMember(listName, .array(list)) : $0
        })))
    }

    static func edgeValue(type: String, nullable: Bool, using random: inout SeededRandom) -> JSONValue {
        if nullable && random.chance(0.15) { return .null }
        func number(_ literal: String) -> JSONValue { .number(JSONNumber(literal: literal) ?? JSONNumber(0)) }
        switch type {
        case "int": return number(random.pick(["-2147483648", "2147483647", "0", "-1"]) ?? "0")
        case "int64":
            return .string(random.pick(["-9223372036854775808", "9223372036854775807", "0", "-1"]) ?? "0")
        case "decimal": return .string(random.pick(["0", "-0.01", "99999999.99", "-99999999.99", "1"]) ?? "0")
        case "float": return number(random.pick(["1.7976931348623157e+308", "5e-324", "-0", "0", "1e-7"]) ?? "0")
        case "boolean": return .bool(random.chance(0.5))
        case "date": return .string(random.pick(["0001-01-01", "9999-12-31", "2024-02-29"]) ?? "2024-02-29")
        case "datetime":
            return .string(random.pick([
                "0001-01-01T00:00:00.000000Z", "9999-12-31T23:59:59.999999Z", "2024-02-29T12:00:00.000000Z",
            ]) ?? "2024-02-29T12:00:00.000000Z")
        case "bytes": return .string(random.pick(["", "AA", String(repeating: "_-", count: 2048)]) ?? "")
        case "json": return .string(random.pick(["{}", "[]", "null", "\"\\u0000\"", "[[[[[[[[1]]]]]]]]"]) ?? "{}")
        default:
            return .string(random.pick([
                "", "\u{0}", "'; DROP TABLE notes; --", String(repeating: "é", count: 5000), "\u{1F600}\u{200D}",
                "e\u{301}", "\u{FEFF}x", "line\nbreak",
            ]) ?? "")
        }
    }
}
