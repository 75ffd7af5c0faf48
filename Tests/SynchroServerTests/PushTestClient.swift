import Foundation
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// A connected client of a running reference server that sends raw push bodies: mutations are JSON
/// text so that tests control every member, including the ones a real client would never send.
struct PushTestClient {
    let server: RunningServer
    let user: String
    let clientID: String
    let generation: Int64
    /// The connect response's `{"version","hash"}` as canonical JSON text.
    let schema: String
    /// The manifest from `schema_definition`, which governs every first-execution outcome.
    let manifest: SchemaManifest
    let scopeSetVersion: Int64

    /// Connects a fresh client and keeps its generation, schema and manifest.
    static func connect(
        _ server: RunningServer, user: String = "alice", clientID: String = "ios-push-1"
    ) throws -> PushTestClient {
        let reply = try server.post("/sync/connect", """
            {"client_id":"\(clientID)","platform":"ios","app_version":"1.0.0","protocol_version":3,\
            "schema":{"version":0,"hash":""},"scope_set_version":0,"known_scopes":{}}
            """, as: user)
        try #require(reply.status == 200, "connect failed: \(reply.text)")
        let schema = try #require(reply.object["schema"]?.objectValue)
        let reference = JSONValue.object(JSONObject([
            JSONMember("version", try #require(schema["version"])), JSONMember("hash", try #require(schema["hash"])),
        ]))
        return PushTestClient(
            server: server, user: user, clientID: clientID,
            generation: try #require(reply.object["client_generation"]?.numberValue?.exactInt64),
            schema: try CanonicalJSON.string(reference),
            manifest: try SchemaManifest(json: try #require(reply.object["schema_definition"])),
            scopeSetVersion: try #require(reply.object["scope_set_version"]?.numberValue?.exactInt64))
    }

    /// Connects again presenting `presentedGeneration`; a value other than the current one makes the
    /// server renew the generation. Returns the client with the generation the server issued.
    func reconnect(presentedGeneration: Int64) throws -> PushTestClient {
        let reply = try server.post("/sync/connect", """
            {"client_id":"\(clientID)","client_generation":\(presentedGeneration),"platform":"ios",\
            "app_version":"1.0.0","protocol_version":3,"schema":\(schema),"scope_set_version":\(scopeSetVersion),\
            "known_scopes":{}}
            """, as: user)
        try #require(reply.status == 200, "reconnect failed: \(reply.text)")
        return PushTestClient(
            server: server, user: user, clientID: clientID,
            generation: try #require(reply.object["client_generation"]?.numberValue?.exactInt64),
            schema: schema, manifest: manifest, scopeSetVersion: scopeSetVersion)
    }

    /// The schema reference object of the connect response.
    var schemaReference: JSONValue { (try? StrictJSONParser().parse(Array(schema.utf8))) ?? .null }

    /// A push body; `generation` and `schema` default to the client's current values.
    func body(
        batch: Int, _ mutations: [String], atomic: Bool = false, generation: Int64? = nil, schema: String? = nil
    ) -> String {
        """
        {"client_id":"\(clientID)","client_generation":\(generation ?? self.generation),\
        "batch_id":"\(uuid(batch))","schema":\(schema ?? self.schema),\(atomic ? "\"atomic\":true," : "")\
        "mutations":[\(mutations.joined(separator: ","))]}
        """
    }

    /// POSTs a push body exactly as given.
    func push(_ body: String, as user: String? = nil) throws -> RunningServer.Reply {
        try server.post("/sync/push", body, as: user ?? self.user)
    }

    /// Builds and POSTs a push.
    func push(batch: Int, _ mutations: [String], atomic: Bool = false) throws -> RunningServer.Reply {
        try push(body(batch: batch, mutations, atomic: atomic))
    }

    /// One mutation object as JSON text; `authored` defaults to the current schema.
    func mutation(
        _ id: Int, _ op: String, table: String = "tbl_notes", pk: String, base: String? = nil,
        columns: String? = nil, authored: String? = nil
    ) -> String {
        var members = [
            "\"mutation_id\":\"\(uuid(id))\"", "\"table\":\"\(table)\"", "\"pk\":\(pk)",
            "\"authored_schema\":\(authored ?? schema)", "\"op\":\"\(op)\"",
        ]
        if let base { members.append("\"base_version\":\"\(base)\"") }
        members.append("\"client_version\":\"2026-10-12T09:29:40.118000Z\"")
        if let columns { members.append("\"columns\":\(columns)") }
        return "{" + members.joined(separator: ",") + "}"
    }

    // MARK: Demo rows

    /// An insert of a note owned by `owner` with every required field.
    func insertNote(_ id: Int, note: String, owner: String? = nil, title: String = "Buy milk") -> String {
        mutation(id, "insert", pk: notePK(note), columns: """
            {"fld_note_owner":"\(owner ?? user)","fld_note_title":"\(title)","fld_note_pinned":false}
            """)
    }

    func updateNote(_ id: Int, note: String, base: String, columns: String = #"{"fld_note_title":"Renamed"}"#)
        -> String
    {
        mutation(id, "update", pk: notePK(note), base: base, columns: columns)
    }

    func deleteNote(_ id: Int, note: String, base: String) -> String {
        mutation(id, "delete", pk: notePK(note), base: base)
    }

    /// An insert of a task (a table without deletion timestamp: deletes leave a fence only).
    func insertTask(_ id: Int, task: String) -> String {
        mutation(id, "insert", table: "tbl_tasks", pk: taskPK(task), columns: """
            {"fld_task_owner":"\(user)","fld_task_title":"Walk","fld_task_done":false,"fld_task_position":1}
            """)
    }

    func updateTask(_ id: Int, task: String, base: String) -> String {
        mutation(id, "update", table: "tbl_tasks", pk: taskPK(task), base: base, columns: #"{"fld_task_done":true}"#)
    }

    func deleteTask(_ id: Int, task: String, base: String) -> String {
        mutation(id, "delete", table: "tbl_tasks", pk: taskPK(task), base: base)
    }

    func notePK(_ id: String) -> String { #"{"fld_note_id":"\#(id)"}"# }
    func taskPK(_ id: String) -> String { #"{"fld_task_id":"\#(id)"}"# }

    /// Inserts a note and returns its server version.
    func createdNote(_ note: String, batch: Int, mutation: Int) throws -> String {
        let reply = try push(batch: batch, [insertNote(mutation, note: note)])
        return try #require(reply.accepted.first?["server_version"]?.stringValue, "insert failed: \(reply.text)")
    }

    /// Inserts a task and returns its server version.
    func createdTask(_ task: String, batch: Int, mutation: Int) throws -> String {
        let reply = try push(batch: batch, [insertTask(mutation, task: task)])
        return try #require(reply.accepted.first?["server_version"]?.stringValue, "insert failed: \(reply.text)")
    }
}

/// A canonical lowercase UUID numbered `n`, distinct for every `n`.
func uuid(_ n: Int) -> String {
    String(format: "0193f0a4-5c1e-7b21-8e4d-%012x", n)
}

extension RunningServer.Reply {
    /// The outcome objects of `accepted`.
    var accepted: [JSONObject] { object["accepted"]?.arrayValue?.compactMap(\.objectValue) ?? [] }
    /// The outcome objects of `rejected`.
    var rejected: [JSONObject] { object["rejected"]?.arrayValue?.compactMap(\.objectValue) ?? [] }
    /// Every outcome, accepted first.
    var outcomes: [JSONObject] { accepted + rejected }
    /// The `error` object of an error envelope.
    var error: JSONObject? { object["error"]?.objectValue }
}

/// The member names of an outcome, for exact member-set checks.
func memberNames(_ object: JSONObject) -> Set<String> { Set(object.keys) }

let outcomeHeader: Set<String> = ["mutation_id", "table", "pk", "outcome_schema", "status"]

/// Checks that an outcome's `server_row` is a complete row of `manifest` and that `row_checksum` is
/// its row digest, recomputed here with SynchroProtocol, under the outcome's `server_version`.
func expectVerifiedRow(
    _ outcome: JSONObject, manifest: SchemaManifest, sourceLocation: SourceLocation = #_sourceLocation
) throws {
    let row = try #require(outcome["server_row"], sourceLocation: sourceLocation)
    let version = try #require(outcome["server_version"]?.stringValue, sourceLocation: sourceLocation)
    let table = try #require(outcome["table"]?.stringValue, sourceLocation: sourceLocation)
    let pk = try #require(outcome["pk"]?.objectValue?.members.first?.value, sourceLocation: sourceLocation)
    let digest = try RowDigest.compute(
        manifest: manifest, tableID: table, primaryKey: pk, row: row, serverVersion: version)
    let checksum = try Checksum(json: try #require(outcome["row_checksum"], sourceLocation: sourceLocation))
    #expect(checksum.hex == digest.hex, sourceLocation: sourceLocation)
}
