import Dispatch
import Foundation
import Synchronization
import SynchroHTTP
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// Many clients at once over loopback, each on its own connection: every request is answered and
/// every client converges to the same catalog digest.
@Suite("Concurrent clients")
struct ConcurrentClientsTests {
    @Test("24 clients connecting, pushing and rebuilding at the same time all succeed and agree")
    func concurrentClients() throws {
        let server = try RunningServer(rows: 200)
        let users = ["alice", "bob", "carol"]
        let results = Mutex<[String: String]>([:])
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 24) { index in
            do {
                let user = users[index % users.count]
                let checksum = try Self.session(server: server, user: user, index: index)
                results.withLock { $0["\(user)-\(index)"] = checksum }
            } catch {
                failures.withLock { $0.append("client \(index): \(error)") }
            }
        }
        #expect(failures.withLock { $0 } == [])
        let digests = Set(results.withLock { $0.values })
        #expect(results.withLock { $0.count } == 24)
        #expect(digests.count == 1)
    }

    /// Connect, one insert into the user's notes, then a full rebuild of `catalog`; returns its checksum.
    static func session(server: RunningServer, user: String, index: Int) throws -> String {
        let transport = try CurlTransport(configuration: .init(baseURL: server.baseURL))
        func post(_ path: String, _ body: String) throws -> JSONObject {
            let response = try transport.send(.protocolPost(
                path: path, body: Array(body.utf8), credential: "secret-\(user)", appVersion: "1.0.0"))
            guard response.status == 200, case .object(let object) = try StrictJSONParser().parse(response.body)
            else { throw Failure(status: response.status) }
            return object
        }
        let client = "concurrent-\(index)"
        let connect = try post("/sync/connect", """
            {"client_id":"\(client)","platform":"linux","app_version":"1.0.0","protocol_version":3,\
            "schema":{"version":0,"hash":""},"scope_set_version":0,"known_scopes":{}}
            """)
        let generation = connect["client_generation"]?.numberValue?.literal ?? "0"
        let schema = try CanonicalJSON.string(.object(JSONObject([
            JSONMember("version", connect["schema"]?.objectValue?["version"] ?? .null),
            JSONMember("hash", connect["schema"]?.objectValue?["hash"] ?? .null),
        ])))
        let push = try post("/sync/push", """
            {"client_id":"\(client)","client_generation":\(generation),\
            "batch_id":"\(UUID().uuidString.lowercased())","schema":\(schema),"mutations":[\
            {"mutation_id":"\(UUID().uuidString.lowercased())","table":"tbl_notes",\
            "pk":{"fld_note_id":"note-\(client)"},"authored_schema":\(schema),"op":"insert",\
            "client_version":"2026-11-29T10:00:00.000000Z",\
            "columns":{"fld_note_owner":"\(user)","fld_note_title":"hello","fld_note_pinned":false}}]}
            """)
        guard push["accepted"]?.arrayValue?.count == 1 else { throw Failure(status: 200) }
        var cursor = "null"
        let rebuildID = UUID().uuidString.lowercased()
        while true {
            let page = try post("/sync/rebuild", """
                {"client_id":"\(client)","client_generation":\(generation),"schema":\(schema),\
                "scope":"catalog","rebuild_id":"\(rebuildID)","cursor":\(cursor),"limit":64}
                """)
            if let next = page["cursor"]?.stringValue {
                cursor = try CanonicalJSON.string(.string(next))
            } else {
                return page["checksum"]?.objectValue?["digest"]?.stringValue ?? ""
            }
        }
    }

    struct Failure: Error {
        let status: Int
    }
}
