import Foundation
import SQLiteKit
import Synchronization
import SynchroClient
import SynchroHTTP
import SynchroProtocol
import Testing
import _SeedkitTestSupport
import SynchroStore

/// A push transport over a running reference server (libcurl, protocol headers) that records every body it
/// sends, so tests can compare retries byte for byte. Each request gets a fresh `CurlTransport`: on a reused
/// connection libcurl silently re-sends a request whose connection died, which would hide a lost response.
final class RecordingServerTransport: SyncTransport {
    let server: RunningServer
    let user: String
    private let sent = Mutex<[[UInt8]]>([])

    init(server: RunningServer, user: String = "alice") {
        self.server = server
        self.user = user
    }

    private let refusal = Mutex<(status: Int, code: String)?>(nil)

    /// Every body posted so far, in order.
    var bodies: [[UInt8]] { sent.withLock { $0 } }

    /// Answers the next request with a non-retryable protocol error instead of sending it on.
    func refuseNext(status: Int, code: String) {
        refusal.withLock { $0 = (status, code) }
    }

    func post(path: String, body: [UInt8]) throws -> SyncReply {
        sent.withLock { $0.append(body) }
        if let (status, code) = refusal.withLock({ pending in defer { pending = nil }; return pending }) {
            let envelope = #"{"error":{"code":"\#(code)","message":"refused","retryable":false}}"#
            return SyncReply(status: status, body: Array(envelope.utf8))
        }
        let transport = try CurlTransport(configuration: .init(baseURL: server.baseURL))
        let response = try transport.send(
            .protocolPost(path: path, body: body, credential: "secret-\(user)", appVersion: "1.0.0"))
        return SyncReply(
            status: response.status, headers: response.headers.map { (name: $0.name, value: $0.value) },
            body: response.body)
    }
}

/// A client store connected to a running server by a minimal test-side connect: the fresh-client connect body,
/// then the returned manifest applied and the client ID and generation stored in the store's meta keys.
/// (Connect proper belongs to the sync engine; this stands in for it only as far as push needs.)
final class ConnectedClient {
    let fixture: StoreFixture
    let transport: RecordingServerTransport
    let clientID: String

    var store: ClientStore { fixture.store }
    var exchange: PushExchange { PushExchange(store: fixture.store, transport: transport) }

    init(server: RunningServer, clientID: String, user: String = "alice") throws {
        self.clientID = clientID
        fixture = try StoreFixture(clientID: clientID, applyDemo: false)
        transport = RecordingServerTransport(server: server, user: user)
        try connect(server: server, user: user)
    }

    /// Posts the fresh-client connect body and binds the store to the reply.
    func connect(server: RunningServer, user: String = "alice") throws {
        let reply = try server.post("/sync/connect", """
            {"client_id":"\(clientID)","platform":"ios","app_version":"1.0.0","protocol_version":3,\
            "schema":{"version":0,"hash":""},"scope_set_version":0,"known_scopes":{}}
            """, as: user)
        try #require(reply.status == 200, "connect failed: \(reply.status)")
        if try store.localSchema().isEmpty {
            try store.applySchema(try ClientManifest(json: try #require(reply.object["schema_definition"])))
        }
        let generation = try #require(reply.object["client_generation"]?.numberValue?.exactInt64)
        try fixture.inspect { connection in
            for (key, value) in [(MetaKey.clientServerID, clientID), (.clientGeneration, String(generation))] {
                try connection.run("DELETE FROM _synchro_meta WHERE key = ?", [.text(key.rawValue)])
                try connection.run(
                    "INSERT INTO _synchro_meta (key, value) VALUES (?, ?)", [.text(key.rawValue), .text(value)])
            }
        }
    }

    /// Inserts a task owned by alice through the application connection (captured).
    func insertTask(_ id: String, title: String = "Walk") throws {
        try store.execute(
            "INSERT INTO tasks (id, owner_id, title, done, position) VALUES (?, 'alice', ?, 0, 1)",
            [.text(id), .text(title)])
    }

    /// The local task title, nil when the row is absent.
    func taskTitle(_ id: String) throws -> String? {
        try fixture.inspect { try $0.scalar("SELECT title FROM tasks WHERE id = ?", [.text(id)])?.textValue }
    }

    /// The stored server version of a task.
    func taskVersion(_ id: String) throws -> String? {
        try fixture.inspect {
            try $0.scalar(
                "SELECT server_version FROM _synchro_row_versions WHERE table_name = 'tasks' AND record_id = ?",
                [.text(id)])?.textValue
        }
    }

    /// Lifecycle states of the ledger in local order.
    func states() throws -> [String] {
        try store.ledger().map(\.state.rawValue)
    }

    /// Unresolved mutations (the sendable queue and anything waiting).
    func unresolvedCount() throws -> Int {
        try store.unresolvedMutations().count
    }

    /// `state` of every batch, in creation order.
    func batchStates() throws -> [String] {
        try fixture.inspect { connection in
            try connection.rows("SELECT state FROM _synchro_push_batches ORDER BY created_at, rowid")
                .compactMap { $0[0].textValue }
        }
    }
}

/// Pushes until nothing is sendable, returning the outcomes.
@discardableResult
func pushAll(_ client: ConnectedClient) throws -> [PushExchange.Outcome] {
    var outcomes: [PushExchange.Outcome] = []
    while let outcome = try client.exchange.pushNext() {
        outcomes.append(outcome)
        guard case .reconciled = outcome else { break }
    }
    return outcomes
}

extension ConnectedClient {
    /// Connects again presenting the stored generation and schema, as a reconnect after a request-binding
    /// failure does, and stores the generation the server issues.
    func reconnect(server: RunningServer, user: String = "alice") throws {
        let generation = try #require(try store.meta(.clientGeneration))
        let version = try #require(try store.meta(.schemaVersion))
        let hash = try #require(try store.meta(.schemaHash))
        let reply = try server.post("/sync/connect", """
            {"client_id":"\(clientID)","client_generation":\(generation),"platform":"ios","app_version":"1.0.0",\
            "protocol_version":3,"schema":{"version":\(version),"hash":"\(hash)"},"scope_set_version":0,\
            "known_scopes":{}}
            """, as: user)
        try #require(reply.status == 200, "reconnect failed: \(reply.status)")
        let renewed = try #require(reply.object["client_generation"]?.numberValue?.exactInt64)
        try fixture.inspect { connection in
            try connection.run(
                "UPDATE _synchro_meta SET value = ? WHERE key = ?",
                [.text(String(renewed)), .text(MetaKey.clientGeneration.rawValue)])
        }
    }
}
