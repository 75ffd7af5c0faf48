import Foundation
import SynchroProtocol
import _SeedkitTestSupport

/// Real protocol bodies recorded once per test process from a reference server (demo dataset, 40 catalog rows):
/// the seeds the fuzz targets mutate. Requests are the exact bodies sent; responses are what came back.
enum FuzzCorpus {
    struct Bodies: Sendable {
        /// Request bodies by route (`connect`, `push`, `pull`, `rebuild`).
        let requests: [String: [UInt8]]
        /// Every 200 and error body received, plus the served manifest and the export bodies.
        let responses: [[UInt8]]
        /// `sp1.` page tokens and `sc1.` continuation receipts of a seed export.
        let tokens: [String]
        /// The export manifest response body.
        let exportManifest: [UInt8]
        /// The served schema manifest.
        let manifest: [UInt8]
    }

    struct RecordingFailure: Error, CustomStringConvertible {
        let description: String
    }

    static let recorded: Result<Bodies, RecordingFailure> = {
        do {
            return .success(try record())
        } catch {
            return .failure(RecordingFailure(description: "\(error)"))
        }
    }()

    /// Every body of the corpus, requests and responses alike.
    static func all() throws -> [[UInt8]] {
        let bodies = try recorded.get()
        return Array(bodies.requests.values) + bodies.responses + [bodies.exportManifest, bodies.manifest]
            + handWritten.map { Array($0.utf8) }
    }

    /// Small documents on the parser's edges.
    static let handWritten = [
        #"{"a":[1,-0,0.5e-3,1E+2,"\u00e9\ud83d\ude00\n\"",true,false,null],"b":{}}"#, "[]", #""""#, "0",
        #"{"nested":[[[[{"deep":[[]]}]]]]}"#, #"[1.7976931348623157e308,5e-324,-9223372036854775808]"#,
    ]

    private static func record() throws -> Bodies {
        let server = try RunningServer(rows: 40)
        var responses: [[UInt8]] = []
        func post(_ path: String, _ body: [UInt8], as user: String = "alice") throws -> JSONObject {
            let reply = try server.post(path, bytes: body, as: user)
            responses.append(reply.body)
            guard reply.status == 200, let object = reply.json.objectValue else {
                throw RecordingFailure(description: "\(path) answered \(reply.status) \(reply.errorCode ?? "")")
            }
            return object
        }
        let connect = Array("""
            {"client_id":"fuzz-client","platform":"linux","app_version":"1.0.0","protocol_version":3,\
            "schema":{"version":0,"hash":""},"scope_set_version":0,"known_scopes":{}}
            """.utf8)
        let connected = try post("/sync/connect", connect)
        let generation = connected["client_generation"]?.numberValue?.literal ?? "1"
        let served = connected["schema"]?.objectValue
        let schema = try CanonicalJSON.string(.object(JSONObject([
            JSONMember("version", served?["version"] ?? .null), JSONMember("hash", served?["hash"] ?? .null),
        ])))
        let push = Array("""
            {"client_id":"fuzz-client","client_generation":\(generation),\
            "batch_id":"6f1c1a52-3c1e-4f7e-9d55-0a4b8c2e7d11","schema":\(schema),"mutations":[\
            {"mutation_id":"0b5e2f8a-9c3d-4e6f-8a1b-2c3d4e5f6a7b","table":"tbl_notes",\
            "pk":{"fld_note_id":"fuzz-note-1"},"authored_schema":\(schema),"op":"insert",\
            "client_version":"2026-11-29T10:00:00.000000Z",\
            "columns":{"fld_note_owner":"alice","fld_note_title":"hello","fld_note_pinned":false,\
            "fld_note_score":"12.5"}},\
            {"mutation_id":"1c6f3a9b-0d4e-4f70-9b2c-3d4e5f6a7b8c","table":"tbl_tasks",\
            "pk":{"fld_task_id":"fuzz-task-1"},"authored_schema":\(schema),"op":"insert",\
            "client_version":"2026-11-29T10:00:00.000000Z",\
            "columns":{"fld_task_owner":"alice","fld_task_title":"t","fld_task_done":true,\
            "fld_task_due":"2026-03-01","fld_task_position":7}}]}
            """.utf8)
        _ = try post("/sync/push", push)
        _ = try post("/sync/push", push)
        let rebuild = Array("""
            {"client_id":"fuzz-client","client_generation":\(generation),"schema":\(schema),\
            "scope":"catalog","rebuild_id":"2d7a4b0c-1e5f-4a81-8c3d-4e5f6a7b8c9d","cursor":null,"limit":10}
            """.utf8)
        let page = try post("/sync/rebuild", rebuild)
        if let next = page["cursor"]?.stringValue {
            _ = try post("/sync/rebuild", Array("""
                {"client_id":"fuzz-client","client_generation":\(generation),"schema":\(schema),\
                "scope":"catalog","rebuild_id":"2d7a4b0c-1e5f-4a81-8c3d-4e5f6a7b8c9d",\
                "cursor":\(try CanonicalJSON.string(.string(next))),"limit":10}
                """.utf8))
        }
        let pull = Array("""
            {"client_id":"fuzz-client","client_generation":\(generation),"schema":\(schema),\
            "scope_set_version":\(connected["scope_set_version"]?.numberValue?.literal ?? "1"),\
            "scopes":{"user:alice":null},"limit":10}
            """.utf8)
        _ = try? post("/sync/pull", pull)
        _ = try? post("/sync/pull", Array(#"{"client_id":"fuzz-client"}"#.utf8))

        let schemaReply = try server.send("GET", "/sync/schema", body: [], headers: [])
        let operatorHeaders = [
            ("Authorization", "Bearer \(RunningServer.operatorToken)"), ("Content-Type", "application/json"),
        ]
        let manifestReply = try server.send(
            "POST", "/operator/seed/manifest", body: Array(#"{"page_limit":15}"#.utf8), headers: operatorHeaders)
        var tokens: [String] = []
        collectTokens(manifestReply.json, into: &tokens)
        if let scope = manifestReply.object["portable_scopes"]?.arrayValue?.first?.objectValue,
           let pageToken = scope["page_token"]?.stringValue, let receipt = scope["continuation_receipt"]?.stringValue
        {
            let body = try CanonicalJSON.encode(.object(JSONObject([
                JSONMember("scope_id", scope["scope_id"] ?? .null), JSONMember("page_token", .string(pageToken)),
                JSONMember("continuation_receipt", .string(receipt)),
                JSONMember("expected_row_ordinal", .number(JSONNumber(1))),
                JSONMember("limit", .number(JSONNumber(15))),
            ])))
            let scopePage = try server.send("POST", "/operator/seed/scope", body: body, headers: operatorHeaders)
            responses.append(scopePage.body)
            collectTokens(scopePage.json, into: &tokens)
        }
        guard tokens.contains(where: { $0.hasPrefix("sp1.") }), tokens.contains(where: { $0.hasPrefix("sc1.") }) else {
            throw RecordingFailure(description: "the export answered no seed tokens")
        }
        return Bodies(
            requests: ["connect": connect, "push": push, "pull": pull, "rebuild": rebuild], responses: responses,
            tokens: tokens, exportManifest: manifestReply.body, manifest: schemaReply.body)
    }

    /// Every string of `value` that looks like a seed token.
    private static func collectTokens(_ value: JSONValue, into tokens: inout [String]) {
        switch value {
        case .string(let text) where text.hasPrefix("sp1.") || text.hasPrefix("sc1."):
            if !tokens.contains(text) { tokens.append(text) }
        case .array(let elements): for element in elements { collectTokens(element, into: &tokens) }
        case .object(let object): for member in object.members { collectTokens(member.value, into: &tokens) }
        default: break
        }
    }
}
