import Dispatch
import Foundation
import Synchronization
import SynchroHTTP
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// Two server processes' engines (each with its own PostgreSQL connection, HTTP port and in-process state) on one
/// PostgreSQL database, and clients that alternate between them: every push is sent to both (the second answer is
/// the first one's replay, so nothing is applied twice), rebuild continuations issued by one are honoured by the
/// other, and both serve the same rows and digests at the end (no write lost or duplicated).
///
/// The short form runs 50 clients with 3 pushes each; `SEEDKIT_SHARED_STORE_CLIENTS` and
/// `SEEDKIT_SHARED_STORE_PUSHES` set a longer one.
@Suite("Two servers on one PostgreSQL database", .serialized)
struct SharedPostgresStoreTests {
    static let users = ["alice", "bob", "carol"]

    @Test("50 concurrent clients alternating between two servers converge; no write is lost or applied twice")
    func twoServersConverge() throws {
        let environment = ProcessInfo.processInfo.environment
        let clients = environment["SEEDKIT_SHARED_STORE_CLIENTS"].flatMap { Int($0) } ?? 50
        let pushes = environment["SEEDKIT_SHARED_STORE_PUSHES"].flatMap { Int($0) } ?? 3
        let first = try RunningServer(rows: 200, store: .postgres)
        let second = try RunningServer(rows: 200, sharing: first)
        let servers = [first, second]
        let before = try Self.users.map { try Self.notes(of: $0, on: first, client: "census-a") }

        let failures = Mutex<[String]>([])
        let group = DispatchGroup()
        for index in 0..<clients {
            DispatchQueue.global().async(group: group) {
                do {
                    try Self.session(index: index, pushes: pushes, servers: servers)
                } catch {
                    failures.withLock { $0.append("client \(index): \(error)") }
                }
            }
        }
        group.wait()
        #expect(failures.withLock { $0 } == [])

        for (userIndex, user) in Self.users.enumerated() {
            let onFirst = try Self.notes(of: user, on: first, client: "census-b")
            let onSecond = try Self.notes(of: user, on: second, client: "census-c")
            #expect(onFirst == onSecond, "the two servers disagree on \(user)'s notes")
            let written = onFirst.ids.filter { $0.hasPrefix("note-shared-") }
            let expected = (0..<clients).filter { $0 % Self.users.count == userIndex }.count * pushes
            #expect(written.count == expected, "\(user): \(written.count) written notes, expected \(expected)")
            #expect(Set(written).count == written.count, "a note appears twice")
            #expect(onFirst.ids.count == before[userIndex].ids.count + expected)
        }
    }

    /// One client: connect on one server, each push sent to one server and then again to the other (a replay),
    /// then its notes scope rebuilt with the pages alternating between the servers.
    static func session(index: Int, pushes: Int, servers: [RunningServer]) throws {
        let user = users[index % users.count]
        let client = Client(user: user, id: "shared-\(index)", servers: servers)
        let connect = try client.post("/sync/connect", on: index, """
            {"client_id":"\(client.id)","platform":"linux","app_version":"1.0.0","protocol_version":3,\
            "schema":{"version":0,"hash":""},"scope_set_version":0,"known_scopes":{}}
            """)
        let generation = connect.object["client_generation"]?.numberValue?.literal ?? "0"
        let schema = try CanonicalJSON.string(.object(JSONObject([
            JSONMember("version", connect.object["schema"]?.objectValue?["version"] ?? .null),
            JSONMember("hash", connect.object["schema"]?.objectValue?["hash"] ?? .null),
        ])))
        for push in 0..<pushes {
            let body = """
                {"client_id":"\(client.id)","client_generation":\(generation),\
                "batch_id":"\(UUID().uuidString.lowercased())","schema":\(schema),"mutations":[\
                {"mutation_id":"\(UUID().uuidString.lowercased())","table":"tbl_notes",\
                "pk":{"fld_note_id":"note-\(client.id)-\(push)"},"authored_schema":\(schema),"op":"insert",\
                "client_version":"2026-11-29T10:00:00.000000Z",\
                "columns":{"fld_note_owner":"\(user)","fld_note_title":"hello","fld_note_pinned":false}}]}
                """
            let applied = try client.post("/sync/push", on: index + push, body)
            guard applied.object["accepted"]?.arrayValue?.count == 1 else { throw Failure("push not accepted") }
            let replayed = try client.post("/sync/push", on: index + push + 1, body)
            guard replayed.body == applied.body else { throw Failure("the other server did not replay the push") }
        }
        let notes = try rebuild(scope: "user:\(user)", client: client, generation: generation, schema: schema, start: index)
        let mine = notes.ids.filter { $0.hasPrefix("note-\(client.id)-") }
        guard mine.count == pushes else { throw Failure("\(mine.count) of \(pushes) own notes after the rebuild") }
    }

    /// A user's notes scope as a fresh client of `user` rebuilds it from `server`.
    static func notes(of user: String, on server: RunningServer, client id: String) throws -> Rebuilt {
        let client = Client(user: user, id: "\(id)-\(user)", servers: [server])
        let connect = try client.post("/sync/connect", on: 0, """
            {"client_id":"\(client.id)","platform":"linux","app_version":"1.0.0","protocol_version":3,\
            "schema":{"version":0,"hash":""},"scope_set_version":0,"known_scopes":{}}
            """)
        let generation = connect.object["client_generation"]?.numberValue?.literal ?? "0"
        let schema = try CanonicalJSON.string(.object(JSONObject([
            JSONMember("version", connect.object["schema"]?.objectValue?["version"] ?? .null),
            JSONMember("hash", connect.object["schema"]?.objectValue?["hash"] ?? .null),
        ])))
        return try rebuild(scope: "user:\(user)", client: client, generation: generation, schema: schema, start: 0)
    }

    /// Every page of a rebuild, page `n` from server `start + n`: the continuation of one server goes to the other.
    static func rebuild(
        scope: String, client: Client, generation: String, schema: String, start: Int
    ) throws -> Rebuilt {
        var cursor = "null"
        var ids: [String] = []
        let rebuildID = UUID().uuidString.lowercased()
        var page = 0
        while true {
            let reply = try client.post("/sync/rebuild", on: start + page, """
                {"client_id":"\(client.id)","client_generation":\(generation),"schema":\(schema),\
                "scope":"\(scope)","rebuild_id":"\(rebuildID)","cursor":\(cursor),"limit":16}
                """)
            page += 1
            for record in reply.object["records"]?.arrayValue ?? [] {
                if let id = record.objectValue?["pk"]?.objectValue?["fld_note_id"]?.stringValue { ids.append(id) }
            }
            if let next = reply.object["cursor"]?.stringValue {
                cursor = try CanonicalJSON.string(.string(next))
            } else {
                return Rebuilt(ids: ids, digest: reply.object["checksum"]?.objectValue?["digest"]?.stringValue ?? "")
            }
        }
    }

    struct Rebuilt: Equatable {
        let ids: [String]
        let digest: String
    }

    /// One client with its own connection to each server.
    struct Client {
        let user: String
        let id: String
        let transports: [CurlTransport]

        init(user: String, id: String, servers: [RunningServer]) {
            self.user = user
            self.id = id
            transports = servers.compactMap { try? CurlTransport(configuration: .init(baseURL: $0.baseURL)) }
        }

        /// POSTs `body` to server `index` modulo the servers; anything but 200 is a failure.
        func post(_ path: String, on index: Int, _ body: String) throws -> RunningServer.Reply {
            let response = try transports[index % transports.count].send(.protocolPost(
                path: path, body: Array(body.utf8), credential: "secret-\(user)", appVersion: "1.0.0"))
            let reply = RunningServer.Reply(status: response.status, headers: [], body: response.body)
            guard reply.status == 200 else { throw Failure("\(path) answered \(reply.status) \(reply.errorCode ?? "")") }
            return reply
        }
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }
}
