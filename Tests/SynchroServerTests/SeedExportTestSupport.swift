import Foundation
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// An operator driving `POST /operator/seed/manifest` and `/operator/seed/scope` of a
/// ``RunningServer`` with exact JSON, checking every page the way the export tool does
/// (`spec/integrity.md` §7.4 exporter checks 3–7).
struct SeedExporter {
    let server: RunningServer

    static let operatorHeaders = [
        ("Authorization", "Bearer \(RunningServer.operatorToken)"), ("Content-Type", "application/json"),
    ]

    func post(_ path: String, _ body: JSONValue, headers: [(String, String)] = operatorHeaders) throws
        -> RunningServer.Reply
    {
        try server.send("POST", path, body: try CanonicalJSON.encode(body), headers: headers)
    }

    /// A new export; the manifest must be 200 and well formed.
    func manifest(pageLimit: Int64) throws -> ExportManifest {
        let reply = try post("/operator/seed/manifest", object(["page_limit": .number(JSONNumber(pageLimit))]))
        try #require(reply.status == 200, "manifest failed: \(reply.text)")
        return try ExportManifest(reply.object)
    }

    static func pageBody(scope: String, token: String, receipt: String, ordinal: Int64, limit: Int64) -> JSONValue {
        object([
            "scope_id": .string(scope), "page_token": .string(token), "continuation_receipt": .string(receipt),
            "expected_row_ordinal": .number(JSONNumber(ordinal)), "limit": .number(JSONNumber(limit)),
        ])
    }

    func page(scope: String, token: String, receipt: String, ordinal: Int64, limit: Int64) throws
        -> RunningServer.Reply
    {
        try post("/operator/seed/scope", Self.pageBody(
            scope: scope, token: token, receipt: receipt, ordinal: ordinal, limit: limit))
    }

    /// Every page of one scope, from its first page token: each page bound to the export, each
    /// record's digest recomputed, identities strictly ascending, count and digest as declared.
    func export(_ scope: ExportManifest.Scope, of manifest: ExportManifest, schema: SchemaManifest) throws
        -> ScopeExport
    {
        var run = ScopeExport()
        var token: String? = scope.pageToken
        while let current = token {
            let payload = try SeedPagePayload(token: try SeedToken.decode(current, expecting: .page))
            try manifest.checkBinding(payload, scope: scope)
            #expect(payload.nextRowOrdinal == UInt64(run.records.count))
            let reply = try page(
                scope: scope.id, token: current, receipt: scope.continuation, ordinal: Int64(run.records.count),
                limit: manifest.pageLimit)
            try #require(reply.status == 200, "page failed: \(reply.text)")
            let body = reply.object
            #expect(body.keys.sorted() == ["has_more", "page_token", "records", "scope"])
            #expect(body["scope"] == .string(scope.id))
            let records = try #require(body["records"]?.arrayValue).compactMap(\.objectValue)
            let hasMore = try #require(body["has_more"]?.boolValue as Bool?)
            #expect(records.count == (hasMore ? Int(manifest.pageLimit) : records.count))
            #expect(records.count <= Int(manifest.pageLimit))
            for record in records {
                #expect(record.keys.sorted() == ["pk", "row", "row_checksum", "server_version", "table"])
                let (identity, digest) = try DigestCheck.verifyRow(record, manifest: schema)
                if let previous = run.entries.last?.identity { #expect(previous < identity) }
                run.entries.append((identity, digest))
            }
            run.records += records
            run.pageTokens.append(current)
            run.pages.append(reply)
            token = body["page_token"]?.stringValue
            #expect(hasMore == (token != nil))
            #expect(token != nil || body["page_token"] == .null)
            try #require(run.pages.count < 10_000)
        }
        #expect(Int64(run.records.count) == scope.cardinality)
        let digest = try ScopeDigest.compute(
            schemaHash: schema.schemaHashOctets, scopeID: scope.id,
            entries: run.entries.map { (identity: $0.identity, rowDigest: $0.digest) })
        #expect(digest.hex == scope.checksum)
        return run
    }

    /// The current manifest as served.
    func schema() throws -> SchemaManifest {
        let reply = try server.send("GET", "/sync/schema", body: [], headers: [])
        return try SchemaManifest(json: reply.json)
    }
}

/// A parsed export manifest, every member checked for type and form.
struct ExportManifest {
    struct Scope {
        let id: String
        let registryGeneration: Int64
        let membershipGeneration: Int64
        let retentionGeneration: Int64
        let cardinality: Int64
        let checksum: String
        let continuation: String
        let pageToken: String
    }

    let json: JSONObject
    let exportID: String
    let manifestHash: String
    let schemaVersion: Int64
    let schemaHash: String
    let streamGeneration: Int64
    let boundary: SeedSnapshotBoundary
    let pageLimit: Int64
    let scopes: [Scope]

    init(_ json: JSONObject) throws {
        self.json = json
        #expect(json.keys.sorted() == [
            "export_id", "export_manifest_hash", "page_limit", "portable_scopes", "schema_hash", "schema_version",
            "snapshot_boundary", "stream_generation",
        ])
        func integer(_ object: JSONObject, _ name: String) throws -> Int64 {
            let number = try #require(object[name]?.numberValue, "\(name) is not a JSON number")
            #expect(number.isIntegerLiteral)
            return try #require(number.exactInt64)
        }
        exportID = try #require(json["export_id"]?.stringValue)
        #expect(WireFormats.isCanonicalUUID(exportID))
        manifestHash = try #require(json["export_manifest_hash"]?.stringValue)
        #expect(Hex.isLowercaseHex(manifestHash, octets: 32))
        schemaVersion = try integer(json, "schema_version")
        schemaHash = try #require(json["schema_hash"]?.stringValue)
        streamGeneration = try integer(json, "stream_generation")
        boundary = try SeedSnapshotBoundary(json: try #require(json["snapshot_boundary"]))
        pageLimit = try integer(json, "page_limit")
        scopes = try #require(json["portable_scopes"]?.arrayValue).map { value in
            let entry = try #require(value.objectValue)
            #expect(entry.keys.sorted() == [
                "cardinality", "checksum", "continuation", "id", "membership_generation", "page_token",
                "registry_generation", "retention_generation",
            ])
            return Scope(
                id: try #require(entry["id"]?.stringValue),
                registryGeneration: try integer(entry, "registry_generation"),
                membershipGeneration: try integer(entry, "membership_generation"),
                retentionGeneration: try integer(entry, "retention_generation"),
                cardinality: try integer(entry, "cardinality"),
                checksum: try Checksum(json: try #require(entry["checksum"])).hex,
                continuation: try #require(entry["continuation"]?.stringValue),
                pageToken: try #require(entry["page_token"]?.stringValue))
        }
    }

    func scope(_ id: String) throws -> Scope { try #require(scopes.first { $0.id == id }) }

    /// `export_manifest_hash` recomputed from the received manifest (`spec/integrity.md` §7.2):
    /// without the hash itself, without each scope's `continuation` and `page_token`, in the
    /// order received.
    func recomputedHash() throws -> String {
        let scopes = try #require(json["portable_scopes"]?.arrayValue).map { value -> JSONValue in
            let entry = value.objectValue?.members ?? []
            return .object(JSONObject(entry.filter { $0.key != "continuation" && $0.key != "page_token" }))
        }
        let body = JSONObject(json.members.compactMap { member -> JSONMember? in
            switch member.key {
            case "export_manifest_hash": nil
            case "portable_scopes": JSONMember("portable_scopes", .array(scopes))
            default: member
            }
        })
        var writer = OctetWriter(domain: "synchro:v3:seed-export-manifest:v1")
        writer.append(try CanonicalJSON.encode(.object(body)))
        return Hex.encode(SHA256.hash(writer.bytes))
    }

    /// A page token's payload names this export, its schema, the scope's generations and the boundary.
    func checkBinding(_ page: SeedPagePayload, scope: Scope) throws {
        #expect(page.exportID == exportID)
        #expect(page.exportManifestHash == manifestHash)
        #expect(page.schemaHash == schemaHash)
        #expect(page.scopeID == scope.id)
        #expect(page.registryGeneration == UInt64(scope.registryGeneration))
        #expect(page.membershipGeneration == UInt64(scope.membershipGeneration))
        #expect(page.retentionGeneration == UInt64(scope.retentionGeneration))
        #expect(page.streamGeneration == UInt64(streamGeneration))
        #expect(page.snapshotBoundary == boundary)
        #expect(page.pageLimit == UInt64(pageLimit))
    }

    /// A receipt's payload matches this scope's schema, generations, boundary, cardinality and checksum.
    func checkReceipt(_ scope: Scope) throws -> SeedContinuationPayload {
        let token = try SeedToken.decode(scope.continuation, expecting: .continuation)
        let receipt = try SeedContinuationPayload(token: token)
        #expect(receipt.exportID == exportID)
        #expect(receipt.exportManifestHash == manifestHash)
        #expect(receipt.schemaHash == schemaHash)
        #expect(receipt.scopeID == scope.id)
        #expect(receipt.registryGeneration == UInt64(scope.registryGeneration))
        #expect(receipt.membershipGeneration == UInt64(scope.membershipGeneration))
        #expect(receipt.retentionGeneration == UInt64(scope.retentionGeneration))
        #expect(receipt.streamGeneration == UInt64(streamGeneration))
        #expect(receipt.snapshotBoundary == boundary)
        #expect(receipt.cardinality == UInt64(scope.cardinality))
        #expect(receipt.checksumDigest == scope.checksum)
        return receipt
    }
}

/// The pages of one scope of one export.
struct ScopeExport {
    var pages: [RunningServer.Reply] = []
    var pageTokens: [String] = []
    var records: [JSONObject] = []
    var entries: [(identity: RowIdentity, digest: [UInt8])] = []
}

/// A client whose database came from a seed: its first connect presents the seed's schema, no
/// generation, and the receipts (`spec/integrity.md` §7.5).
enum SeededConnect {
    static func body(
        client: String, schemaVersion: Int64, schemaHash: String, receipts: [(String, String)]
    ) -> JSONValue {
        object([
            "client_id": .string(client), "platform": .string("ios"), "app_version": .string("1.0.0"),
            "protocol_version": .number(JSONNumber(3)),
            "schema": object(["version": .number(JSONNumber(schemaVersion)), "hash": .string(schemaHash)]),
            "scope_set_version": .number(JSONNumber(0)), "known_scopes": object([:]),
            "seed_receipts": .object(JSONObject(receipts.map { JSONMember($0.0, .string($0.1)) })),
        ])
    }

    /// Connects and returns the reply with the `scopes.add` cursors by scope (`.null` kept as nil).
    static func connect(
        _ server: RunningServer, user: String = "alice", client: String, schema: SchemaManifest,
        receipts: [(String, String)]
    ) throws -> (reply: RunningServer.Reply, added: [String: String?], removed: [String]) {
        let reply = try server.post("/sync/connect", body(
            client: client, schemaVersion: schema.schemaVersion, schemaHash: schema.schemaHash, receipts: receipts),
            as: user)
        try #require(reply.status == 200, "connect failed: \(reply.text)")
        let scopes = try #require(reply.object["scopes"]?.objectValue)
        var added: [String: String?] = [:]
        for entry in try #require(scopes["add"]?.arrayValue) {
            let item = try #require(entry.objectValue)
            #expect(item.keys.sorted() == ["cursor", "id"])
            added[try #require(item["id"]?.stringValue)] = item["cursor"]?.stringValue
        }
        let removed = try #require(scopes["remove"]?.arrayValue).compactMap(\.stringValue)
        return (reply, added, removed)
    }

    /// The test client of a seeded connect, for raw pulls.
    static func wireClient(
        _ server: RunningServer, user: String = "alice", client: String, reply: RunningServer.Reply,
        schema: SchemaManifest, scopes: [String]
    ) throws -> WireClient {
        WireClient(
            server: server, user: user, clientID: client,
            generation: try #require(reply.object["client_generation"]?.numberValue?.exactInt64),
            schema: object([
                "version": .number(JSONNumber(schema.schemaVersion)), "hash": .string(schema.schemaHash),
            ]),
            schemaHash: schema.schemaHash, manifest: schema,
            scopeSetVersion: try #require(reply.object["scope_set_version"]?.numberValue?.exactInt64),
            scopes: scopes)
    }
}

/// Token surgery for forgery tests: the same envelope with one part changed.
enum TokenSurgery {
    /// The token with its MAC's first octet flipped.
    static func flippedMAC(_ token: String) throws -> String {
        let decoded = try SeedToken.decode(token)
        var mac = decoded.mac
        mac[0] ^= 0x01
        return try SeedToken.encode(kind: decoded.kind, payload: decoded.payload, mac: mac)
    }

    /// The token with one payload member replaced and the original MAC kept.
    static func replacing(_ token: String, member: String, with value: JSONValue) throws -> String {
        let decoded = try SeedToken.decode(token)
        let payload = JSONObject(decoded.payload.members.map { $0.key == member ? JSONMember(member, value) : $0 })
        return try SeedToken.encode(kind: decoded.kind, payload: payload, mac: decoded.mac)
    }
}
