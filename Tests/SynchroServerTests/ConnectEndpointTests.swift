import Foundation
import SynchroHTTP
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// `POST /sync/connect` driven over loopback with raw JSON (`spec/wire-protocol.md` §3).
@Suite("Connect endpoint")
struct ConnectEndpointTests {
    static func freshBody(client: String = "ios-1", extra: String = "") -> String {
        """
        {"client_id":"\(client)","platform":"ios","app_version":"2.4.0","protocol_version":3,\
        "schema":{"version":0,"hash":""},"scope_set_version":0,"known_scopes":{}\(extra)}
        """
    }

    static func continuingBody(client: String = "ios-1", generation: Int64, schema: JSONValue, setVersion: Int64) throws
        -> String
    {
        let schemaText = try CanonicalJSON.string(schema)
        return """
            {"client_id":"\(client)","client_generation":\(generation),"platform":"ios","app_version":"2.4.0",\
            "protocol_version":3,"schema":\(schemaText),"scope_set_version":\(setVersion),"known_scopes":{}}
            """
    }

    /// `{"version","hash"}` of a connect response's `schema` member.
    static func reference(_ reply: RunningServer.Reply) -> JSONValue {
        let schema = reply.object["schema"]?.objectValue
        return .object(JSONObject([
            JSONMember("version", schema?["version"] ?? .null), JSONMember("hash", schema?["hash"] ?? .null),
        ]))
    }

    @Test("a fresh client gets generation 1, the replace action with the manifest, and every assigned scope")
    func freshClient() throws {
        let server = try RunningServer()
        let reply = try server.post("/sync/connect", Self.freshBody())
        #expect(reply.status == 200)
        let body = reply.object
        #expect(body["protocol_version"] == .number(JSONNumber(3)))
        #expect(body["client_generation"] == .number(JSONNumber(1)))
        #expect(body["scope_set_version"] == .number(JSONNumber(1)))
        #expect(body["schema"]?.objectValue?["action"] == .string("replace"))
        let definition = try #require(body["schema_definition"])
        let manifest = try SchemaManifest(json: definition)
        #expect(body["schema"]?.objectValue?["hash"] == .string(manifest.schemaHash))
        let added = body["scopes"]?.objectValue?["add"]?.arrayValue ?? []
        #expect(added.compactMap { $0.objectValue?["id"]?.stringValue } == ["catalog", "user:alice"])
        #expect(added.allSatisfy { $0.objectValue?["cursor"] == .null })
        #expect(body["scopes"]?.objectValue?["remove"] == .array([]))
        #expect(body["scope_cursor_updates"] == .object(JSONObject([])))
        #expect(body["affected_scopes"] == nil)
        #expect(WireFormats.isTimestamp(body["server_time"]?.stringValue ?? ""))
    }

    @Test("a continuing client on the current schema gets none, no manifest and no assignment delta")
    func continuingClient() throws {
        let server = try RunningServer()
        let first = try server.post("/sync/connect", Self.freshBody())
        let again = try server.post("/sync/connect", try Self.continuingBody(
            generation: 1, schema: Self.reference(first), setVersion: 1))
        #expect(again.status == 200)
        #expect(again.object["schema"]?.objectValue?["action"] == .string("none"))
        #expect(again.object["schema_definition"] == nil)
        #expect(again.object["client_generation"] == .number(JSONNumber(1)))
        #expect(again.object["scope_set_version"] == .number(JSONNumber(1)))
        #expect(again.object["scopes"]?.objectValue?["add"] == .array([]))
    }

    @Test("an unknown schema reference gets unsupported with unknown_schema_lineage and no manifest")
    func unknownLineage() throws {
        let server = try RunningServer()
        _ = try server.post("/sync/connect", Self.freshBody())
        let stranger = JSONValue.object(JSONObject([
            JSONMember("version", .number(JSONNumber(7))), JSONMember("hash", .string(String(repeating: "ab", count: 32))),
        ]))
        let reply = try server.post("/sync/connect", try Self.continuingBody(generation: 1, schema: stranger, setVersion: 1))
        #expect(reply.status == 200)
        #expect(reply.object["schema"]?.objectValue?["action"] == .string("unsupported"))
        #expect(reply.object["schema"]?.objectValue?["reason"] == .string("unknown_schema_lineage"))
        #expect(reply.object["schema_definition"] == nil)
    }

    @Test("protocol version 2 gets 426 upgrade_required with both protocol versions")
    func protocolGate() throws {
        let server = try RunningServer()
        let body = Self.freshBody().replacingOccurrences(of: "\"protocol_version\":3", with: "\"protocol_version\":2")
        let reply = try server.post("/sync/connect", body)
        #expect(reply.status == 426)
        #expect(reply.errorCode == "upgrade_required")
        let error = reply.object["error"]?.objectValue
        #expect(error?["required_protocol_version"] == .number(JSONNumber(3)))
        #expect(error?["received_protocol_version"] == .number(JSONNumber(2)))
        #expect(error?["retryable"] == .bool(false))
    }

    @Test("an app version below the minimum runtime gets 426 with both versions")
    func runtimeGate() throws {
        let server = try RunningServer(minimumClientVersion: SemanticVersion("3.0.0"))
        let reply = try server.post("/sync/connect", Self.freshBody())
        #expect(reply.status == 426)
        #expect(reply.object["error"]?.objectValue?["minimum_client_version"] == .string("3.0.0"))
        #expect(reply.object["error"]?.objectValue?["received_client_version"] == .string("2.4.0"))
    }

    @Test("misused schema references get 400 invalid_schema_reference with received_schema", arguments: [
        "sentinel with a generation", "malformed reference", "known identity without generation",
        "sentinel from a known identity",
    ])
    func invalidSchemaReference(case name: String) throws {
        let server = try RunningServer()
        var body = Self.freshBody()
        switch name {
        case "sentinel with a generation":
            body = Self.freshBody(extra: ",\"client_generation\":1")
        case "malformed reference":
            body = body.replacingOccurrences(of: "{\"version\":0,\"hash\":\"\"}", with: "{\"version\":1,\"hash\":\"xyz\"}")
        default:
            // An identity is known from the moment its first connect is committed (upstream `synchro_connect`).
            #expect(try server.post("/sync/connect", Self.freshBody()).status == 200)
            if name == "known identity without generation" {
                body = body.replacingOccurrences(
                    of: "{\"version\":0,\"hash\":\"\"}", with: "{\"version\":1,\"hash\":\"\(String(repeating: "a", count: 64))\"}")
            }
        }
        let reply = try server.post("/sync/connect", body)
        #expect(reply.status == 400)
        #expect(reply.errorCode == "invalid_schema_reference")
        #expect(reply.object["error"]?.objectValue?["received_schema"] != nil)
    }

    /// Upstream's `synchro_connect` refuses the sentinel from any stored client row (`docs/upstream/
    /// postgresql-extension.md` §5 point 8), and a rejected connect changes no durable client state (§3.5).
    @Test("a first connect sent again is refused with 400 invalid_schema_reference and changes nothing")
    func repeatedFirstConnect() throws {
        let server = try RunningServer()
        let first = try server.post("/sync/connect", Self.freshBody())
        #expect(first.object["client_generation"] == .number(JSONNumber(1)))
        let again = try server.post("/sync/connect", Self.freshBody())
        #expect(again.status == 400)
        #expect(again.errorCode == "invalid_schema_reference")
        #expect(again.object["error"]?.objectValue?["retryable"] == .bool(false))
        #expect(again.object["error"]?.objectValue?["received_schema"] == .object(JSONObject([
            JSONMember("hash", .string("")), JSONMember("version", .number(JSONNumber(0))),
        ])))

        // The registration of the first answer is untouched: its holder continues with generation 1, no delta.
        let continuing = try server.post("/sync/connect", try Self.continuingBody(
            generation: 1, schema: Self.reference(first),
            setVersion: first.object["scope_set_version"]?.numberValue?.exactInt64 ?? 0))
        #expect(continuing.status == 200)
        #expect(continuing.object["schema"]?.objectValue?["action"] == .string("none"))
        #expect(continuing.object["client_generation"] == .number(JSONNumber(1)))
        #expect(continuing.object["scopes"]?.objectValue?["add"] == .array([]))
        #expect(try server.post("/sync/connect", Self.freshBody()).errorCode == "invalid_schema_reference")
    }

    @Test("an identity that pushed with its generation is known: the fresh sentinel is refused afterwards")
    func pushedIdentityIsKnown() throws {
        let server = try RunningServer()
        let client = try PushTestClient.connect(server, clientID: "ios-1")
        #expect(try client.push(batch: 1, [client.insertNote(1, note: "note-known-1")]).status == 200)
        let again = try server.post("/sync/connect", Self.freshBody())
        #expect(again.status == 400)
        #expect(again.errorCode == "invalid_schema_reference")
    }

    @Test("a first connect lost on the way back is committed: its resend is refused, a new identity is fresh")
    func lostFirstConnectResponse() throws {
        let server = try RunningServer()
        try server.engine.inject(.loseResponse(route: "/sync/connect", count: 1))
        #expect(throws: TransportError.self) { _ = try server.post("/sync/connect", Self.freshBody()) }
        let retry = try server.post("/sync/connect", Self.freshBody())
        #expect(retry.status == 400)
        #expect(retry.errorCode == "invalid_schema_reference")
        // What the engine does next (`docs/decisions.md`): a first connect under an identity nobody registered.
        let fresh = try server.post("/sync/connect", Self.freshBody(client: "ios-1-next"))
        #expect(fresh.status == 200)
        #expect(fresh.object["client_generation"] == .number(JSONNumber(1)))
        #expect(fresh.object["schema"]?.objectValue?["action"] == .string("replace"))
    }

    @Test("structurally invalid bodies get 400 invalid_request", arguments: [
        "{\"client_id\":\"ios-1\"}",
        "[1,2]",
        "{\"client_id\":\"ios-1\",\"client_id\":\"ios-2\"}",
        "not json",
    ])
    func structural(body: String) throws {
        let server = try RunningServer()
        let reply = try server.post("/sync/connect", body)
        #expect(reply.status == 400)
        #expect(reply.errorCode == "invalid_request")
    }

    @Test("an unknown member and a bad app version are invalid requests")
    func unknownMemberAndSemver() throws {
        let server = try RunningServer()
        #expect(try server.post("/sync/connect", Self.freshBody(extra: ",\"debug\":true")).errorCode == "invalid_request")
        let vPrefixed = Self.freshBody().replacingOccurrences(of: "\"2.4.0\"", with: "\"v2.4.0\"")
        #expect(try server.post("/sync/connect", vPrefixed).errorCode == "invalid_request")
    }

    @Test("authentication: missing, wrong, repeated credentials and another user's client all get 401")
    func authentication() throws {
        let server = try RunningServer()
        let body = Array(Self.freshBody().utf8)
        let json = ("Content-Type", "application/json")
        for headers in [
            [json],
            [json, ("Authorization", "Bearer wrong")],
            [json, ("Authorization", "Basic secret-alice")],
            [json, ("Authorization", "Bearer secret-alice"), ("Authorization", "Bearer secret-alice")],
        ] {
            let reply = try server.send("POST", "/sync/connect", body: body, headers: headers)
            #expect(reply.status == 401)
            #expect(reply.errorCode == "auth_required")
        }
        #expect(try server.post("/sync/connect", Self.freshBody()).status == 200)
        let stolen = try server.post("/sync/connect", Self.freshBody(), as: "bob")
        #expect(stolen.status == 401)
        #expect(stolen.errorCode == "auth_required")
    }

    @Test("the media type must be exactly one well-formed application/json")
    func contentType() throws {
        let server = try RunningServer()
        let body = Array(Self.freshBody().utf8)
        let auth = ("Authorization", "Bearer secret-alice")
        for type in ["text/plain", "application/json; charset", "application/jsonx"] {
            let reply = try server.send("POST", "/sync/connect", body: body, headers: [auth, ("Content-Type", type)])
            #expect(reply.status == 400, "\(type)")
        }
        let ok = try server.send(
            "POST", "/sync/connect", body: body, headers: [auth, ("Content-Type", "Application/JSON; charset=utf-8")])
        #expect(ok.status == 200)
    }

    @Test("seed receipts: an assigned scope is re-added, an unassigned one is removed")
    func seedReceipts() throws {
        let server = try RunningServer()
        let reply = try server.post("/sync/connect", Self.freshBody(
            extra: ",\"seed_receipts\":{\"catalog\":\"sc1.e30.AAAA\",\"region:mars\":\"sc1.e30.AAAA\"}"))
        #expect(reply.status == 200)
        let scopes = reply.object["scopes"]?.objectValue
        let added = scopes?["add"]?.arrayValue?.compactMap { $0.objectValue?["id"]?.stringValue }
        #expect(added == ["catalog", "user:alice"])
        #expect(scopes?["remove"] == .array([.string("region:mars")]))
    }

    @Test("operator and readiness routes, and 405 with Allow for a wrong method")
    func otherRoutes() throws {
        let server = try RunningServer()
        let ready = try server.send("GET", "/ready", body: [], headers: [])
        #expect(ready.status == 200 && ready.text == "{\"ready\":true}")
        let schema = try server.send("GET", "/sync/schema", body: [], headers: [])
        #expect(schema.status == 200)
        #expect(throws: Never.self) { _ = try SchemaManifest(json: schema.json) }
        let wrong = try server.send("GET", "/sync/connect", body: [], headers: [])
        #expect(wrong.status == 405)
        #expect(wrong.header("Allow") == "POST")
        #expect(wrong.errorCode == "invalid_request")
    }
}
