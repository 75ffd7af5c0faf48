import Foundation
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// A connected test client speaking raw protocol JSON to a ``RunningServer``: connect once, then
/// build exact pull and rebuild bodies and check responses with SynchroProtocol's digests.
struct WireClient {
    let server: RunningServer
    let user: String
    let clientID: String
    var generation: Int64
    let schema: JSONValue
    let schemaHash: String
    let manifest: SchemaManifest
    var scopeSetVersion: Int64
    /// The scopes connect added, byte order.
    let scopes: [String]

    /// Connects a fresh client (`spec/wire-protocol.md` §3.8).
    static func connect(_ server: RunningServer, user: String = "alice", clientID: String? = nil) throws -> WireClient {
        let id = clientID ?? "test-\(user)-\(UUID().uuidString.lowercased())"
        let reply = try server.post("/sync/connect", """
            {"client_id":"\(id)","platform":"ios","app_version":"1.0.0","protocol_version":3,\
            "schema":{"version":0,"hash":""},"scope_set_version":0,"known_scopes":{}}
            """, as: user)
        try #require(reply.status == 200, "connect failed: \(reply.text)")
        let body = reply.object
        let schema = try #require(body["schema"]?.objectValue)
        let hash = try #require(schema["hash"]?.stringValue)
        let manifest = try SchemaManifest(json: try #require(body["schema_definition"]))
        let added = try #require(body["scopes"]?.objectValue?["add"]?.arrayValue)
        return WireClient(
            server: server, user: user, clientID: id,
            generation: try #require(body["client_generation"]?.numberValue?.exactInt64),
            schema: .object(JSONObject([
                JSONMember("version", try #require(schema["version"])), JSONMember("hash", .string(hash)),
            ])),
            schemaHash: hash, manifest: manifest,
            scopeSetVersion: try #require(body["scope_set_version"]?.numberValue?.exactInt64),
            scopes: added.compactMap { $0.objectValue?["id"]?.stringValue })
    }

    /// The same client speaking to `other` (a server reopened on the same database).
    func on(_ other: RunningServer) -> WireClient {
        WireClient(
            server: other, user: user, clientID: clientID, generation: generation, schema: schema,
            schemaHash: schemaHash, manifest: manifest, scopeSetVersion: scopeSetVersion, scopes: scopes)
    }

    // MARK: Rebuild

    func rebuildBody(scope: String, rebuildID: String, cursor: String?, limit: Int64) -> JSONValue {
        .object(JSONObject([
            JSONMember("client_id", .string(clientID)),
            JSONMember("client_generation", .number(JSONNumber(generation))),
            JSONMember("schema", schema),
            JSONMember("scope", .string(scope)),
            JSONMember("rebuild_id", .string(rebuildID)),
            JSONMember("cursor", cursor.map(JSONValue.string) ?? .null),
            JSONMember("limit", .number(JSONNumber(limit))),
        ]))
    }

    func rebuildPage(scope: String, rebuildID: String, cursor: String?, limit: Int64) throws -> RunningServer.Reply {
        let body = rebuildBody(scope: scope, rebuildID: rebuildID, cursor: cursor, limit: limit)
        return try server.post("/sync/rebuild", body, as: user)
    }

    /// Every page of one rebuild attempt, each checked for the intermediate/final shape of §6.2.
    func rebuild(scope: String, limit: Int64, rebuildID: String = newRebuildID()) throws -> RebuildRun {
        var pages: [RunningServer.Reply] = []
        var cursor: String?
        repeat {
            let reply = try rebuildPage(scope: scope, rebuildID: rebuildID, cursor: cursor, limit: limit)
            try #require(reply.status == 200, "rebuild page failed: \(reply.text)")
            let page = reply.object
            #expect(page["scope"]?.stringValue == scope)
            #expect((page["records"]?.arrayValue?.count ?? Int.max) <= Int(limit))
            let hasMore = try #require(page["has_more"]?.boolValue as Bool?)
            cursor = page["cursor"]?.stringValue
            #expect(hasMore == (cursor != nil))
            #expect(hasMore == (page["final_scope_cursor"] == nil))
            #expect(hasMore == (page["checksum"] == nil))
            #expect(page.count == (hasMore ? 4 : 6))
            pages.append(reply)
            try #require(pages.count < 10_000)
        } while cursor != nil
        return RebuildRun(rebuildID: rebuildID, pages: pages)
    }

    // MARK: Pull

    func pullBody(scopes: [(String, String?)], limit: Int64, scopeSetVersion: Int64? = nil) -> JSONValue {
        .object(JSONObject([
            JSONMember("client_id", .string(clientID)),
            JSONMember("client_generation", .number(JSONNumber(generation))),
            JSONMember("schema", schema),
            JSONMember("scope_set_version", .number(JSONNumber(scopeSetVersion ?? self.scopeSetVersion))),
            JSONMember("scopes", .object(JSONObject(scopes.map { scope, cursor in
                JSONMember(scope, .object(JSONObject([JSONMember("cursor", cursor.map(JSONValue.string) ?? .null)])))
            }))),
            JSONMember("limit", .number(JSONNumber(limit))),
        ]))
    }

    func pull(_ scopes: [(String, String?)], limit: Int64 = 1000, scopeSetVersion: Int64? = nil) throws
        -> RunningServer.Reply
    {
        let body = pullBody(scopes: scopes, limit: limit, scopeSetVersion: scopeSetVersion)
        return try server.post("/sync/pull", body, as: user)
    }

    /// Pulls page after page from `cursors` until a terminal page; returns every change and the
    /// terminal page. Each intermediate page must issue cursors that let the next page progress.
    func pullToTerminal(from cursors: [String: String], limit: Int64) throws
        -> (changes: [JSONObject], last: JSONObject)
    {
        var cursors = cursors
        var changes: [JSONObject] = []
        for _ in 0..<10_000 {
            let reply = try pull(cursors.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }, limit: limit)
            try #require(reply.status == 200, "pull failed: \(reply.text)")
            let page = reply.object
            let pageChanges = try #require(page["changes"]?.arrayValue).compactMap(\.objectValue)
            #expect(pageChanges.count <= Int(limit))
            changes += pageChanges
            for member in try #require(page["scope_cursors"]?.objectValue).members {
                let cursor: String = try #require(member.value.stringValue)
                cursors[member.key] = cursor
            }
            if page["has_more"]?.boolValue == false { return (changes, page) }
            #expect(page["checksums"] == nil)
        }
        Issue.record("pull never reached a terminal page")
        return (changes, JSONObject([]))
    }

    static func newRebuildID() -> String { UUID().uuidString.lowercased() }
}

/// The pages of one rebuild attempt.
struct RebuildRun {
    let rebuildID: String
    let pages: [RunningServer.Reply]

    var final: JSONObject { pages.last?.object ?? JSONObject([]) }
    var records: [JSONObject] { pages.flatMap { $0.object["records"]?.arrayValue ?? [] }.compactMap(\.objectValue) }
    var finalCursor: String? { final["final_scope_cursor"]?.stringValue }
    var checksum: String? { final["checksum"]?.objectValue?["digest"]?.stringValue }
    /// The continuation each page returned (nil on the final page).
    var continuations: [String?] { pages.map { $0.object["cursor"]?.stringValue } }
}

/// Digest checks done the way a client does them (`spec/wire-protocol.md` §2.10).
enum DigestCheck {
    /// Recomputes the row digest of a rebuild record or row-bearing pull change and compares it
    /// with its `row_checksum`; returns the identity and digest.
    static func verifyRow(_ record: JSONObject, manifest: SchemaManifest) throws -> (RowIdentity, [UInt8]) {
        let table = try #require(record["table"]?.stringValue)
        let pk = try #require(record["pk"]?.objectValue)
        let keyField = try #require(manifest.table(id: table)?.primaryKeyFieldID)
        #expect(pk.count == 1)
        let key = try #require(pk[keyField])
        let digest = try RowDigest.compute(
            manifest: manifest, tableID: table, primaryKey: key, row: try #require(record["row"]),
            serverVersion: try #require(record["server_version"]?.stringValue))
        let checksum = try Checksum(json: try #require(record["row_checksum"]))
        #expect(checksum.digest == digest.digest, "row checksum differs for a record of \(table)")
        return (digest.identity, digest.digest)
    }

    /// The scope digest of `records`, each verified first.
    static func scopeDigest(_ records: [JSONObject], scope: String, manifest: SchemaManifest) throws -> String {
        let entries = try records.map { try verifyRow($0, manifest: manifest) }
        return try ScopeDigest.compute(
            schemaHash: manifest.schemaHashOctets, scopeID: scope,
            entries: entries.map { (identity: $0.0, rowDigest: $0.1) }
        ).hex
    }

    /// The digest of a terminal pull checksum entry.
    static func checksum(_ page: JSONObject, scope: String) -> String? {
        page["checksums"]?.objectValue?[scope]?.objectValue?["digest"]?.stringValue
    }
}

extension RunningServer.Reply {
    /// The error envelope's extra member `name`.
    func errorMember(_ name: String) -> JSONValue? { object["error"]?.objectValue?[name] }
}

/// Shorthand for JSON objects in tests.
func object(_ pairs: KeyValuePairs<String, JSONValue>) -> JSONValue { .object(JSONObject(pairs)) }
