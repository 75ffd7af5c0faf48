/// `POST /sync/connect` request (`spec/wire-protocol.md` §3.1).
public struct ConnectRequest: Sendable, Equatable {
    public var clientID: String
    /// Absent only for a fresh local client.
    public var clientGeneration: Int64?
    public var platform: String
    public var appVersion: String
    public var protocolVersion: Int64
    /// `true` only for an explicit recovery from `unsupported`; absent and `false` both mean no reset.
    public var schemaReset: Bool
    /// The installed schema, or nil for the fresh sentinel `{"version":0,"hash":""}`.
    public var schema: SchemaReference?
    public var scopeSetVersion: Int64
    public var knownScopes: ScopeCursorMap
    /// Scope ID → receipt; nil when the member is absent (never an empty map on the wire).
    public var seedReceipts: [(scopeID: String, receipt: String)]?

    public init(
        clientID: String, clientGeneration: Int64?, platform: String, appVersion: String,
        schemaReset: Bool = false, schema: SchemaReference?, scopeSetVersion: Int64,
        knownScopes: ScopeCursorMap, seedReceipts: [(scopeID: String, receipt: String)]? = nil
    ) {
        self.clientID = clientID
        self.clientGeneration = clientGeneration
        self.platform = platform
        self.appVersion = appVersion
        self.protocolVersion = 3
        self.schemaReset = schemaReset
        self.schema = schema
        self.scopeSetVersion = scopeSetVersion
        self.knownScopes = knownScopes
        self.seedReceipts = seedReceipts
    }

    public static func == (lhs: ConnectRequest, rhs: ConnectRequest) -> Bool {
        (try? CanonicalJSON.encode(lhs.json)) == (try? CanonicalJSON.encode(rhs.json))
    }

    /// Why a connect body was refused, in dispatch order (§3.3 rows 1–2, §8.4).
    public enum Failure: Error, Sendable, Equatable {
        /// 426: `protocol_version` other than 3.
        case unsupportedProtocol(received: JSONValue)
        /// 400 `invalid_schema_reference`: malformed `schema` (carries the received value).
        case invalidSchemaReference(received: JSONValue)
        /// 400 `invalid_request`.
        case invalid(ExactObjectReader.Violation)
    }

    static let required: Set<String> = [
        "client_id", "platform", "app_version", "protocol_version", "schema", "scope_set_version", "known_scopes",
    ]
    static let optional: Set<String> = ["client_generation", "schema_reset", "seed_receipts"]

    /// Validates a parsed connect body. The protocol gate runs first, as the dispatch order says.
    public static func parse(json: JSONValue) throws(Failure) -> ConnectRequest {
        if case .object(let o) = json, let version = o["protocol_version"],
           version.numberValue?.literal != "3" {
            throw .unsupportedProtocol(received: version)
        }
        let r: ExactObjectReader
        do {
            r = try ExactObjectReader(json, path: "", required: required, optional: optional)
        } catch {
            throw .invalid(error)
        }
        let schemaValue = r.object["schema"] ?? .null
        var schema: SchemaReference?
        if !isFreshSentinel(schemaValue) {
            do { schema = try SchemaReference(json: schemaValue) } catch {
                throw .invalidSchemaReference(received: schemaValue)
            }
        }
        do throws(ExactObjectReader.Violation) {
            return try parseMembers(r, schema: schema)
        } catch {
            throw .invalid(error)
        }
    }

    private static func parseMembers(
        _ r: ExactObjectReader, schema: SchemaReference?
    ) throws(ExactObjectReader.Violation) -> ConnectRequest {
        let appVersion = try r.string("app_version")
        guard SemanticVersion(appVersion) != nil else { throw .init("invalid_semver", "app_version") }
        var receipts: [(scopeID: String, receipt: String)]?
        if r.has("seed_receipts") {
            let map = try r.object("seed_receipts")
            guard map.count > 0 else { throw .init("empty_seed_receipts", "seed_receipts") }
            receipts = []
            for m in map.members {
                guard case .string(let receipt) = m.value, !receipt.utf8.isEmpty, !m.key.utf8.isEmpty else {
                    throw .init("invalid_seed_receipt", "seed_receipts.*")
                }
                receipts?.append((m.key, receipt))
            }
        }
        return ConnectRequest(
            clientID: try r.string("client_id"),
            clientGeneration: r.has("client_generation")
                ? try r.integer("client_generation", in: ExactObjectReader.positive) : nil,
            platform: try r.string("platform"),
            appVersion: appVersion,
            schemaReset: r.has("schema_reset") ? try r.bool("schema_reset") : false,
            schema: schema,
            scopeSetVersion: try r.integer("scope_set_version", in: ExactObjectReader.nonNegative),
            knownScopes: try ScopeCursorMap(json: try r.object("known_scopes"), path: "known_scopes"),
            seedReceipts: receipts)
    }

    /// `{"version": 0, "hash": ""}` exactly.
    static func isFreshSentinel(_ value: JSONValue) -> Bool {
        guard case .object(let o) = value, o.count == 2, o["version"]?.numberValue?.literal == "0",
              case .string(let hash)? = o["hash"]
        else { return false }
        return hash.isEmpty
    }

    /// The request body as the client sends it.
    public var json: JSONValue {
        var members = [JSONMember("client_id", .string(clientID))]
        if let clientGeneration { members.append(JSONMember("client_generation", .number(JSONNumber(clientGeneration)))) }
        members += [
            JSONMember("platform", .string(platform)),
            JSONMember("app_version", .string(appVersion)),
            JSONMember("protocol_version", .number(JSONNumber(protocolVersion))),
        ]
        if schemaReset { members.append(JSONMember("schema_reset", .bool(true))) }
        members += [
            JSONMember("schema", schema?.json ?? .object(JSONObject([
                JSONMember("version", .number(JSONNumber(0))), JSONMember("hash", .string("")),
            ]))),
            JSONMember("scope_set_version", .number(JSONNumber(scopeSetVersion))),
            JSONMember("known_scopes", knownScopes.json),
        ]
        if let seedReceipts {
            members.append(JSONMember("seed_receipts", .object(JSONObject(seedReceipts.map {
                JSONMember($0.scopeID, .string($0.receipt))
            }))))
        }
        return .object(JSONObject(members))
    }
}

/// `POST /sync/pull` request (§5.1).
public struct PullRequest: Sendable, Equatable {
    public var clientID: String
    public var clientGeneration: Int64
    public var schema: SchemaReference
    public var scopeSetVersion: Int64
    public var scopes: ScopeCursorMap
    public var limit: Int64

    public init(
        clientID: String, clientGeneration: Int64, schema: SchemaReference, scopeSetVersion: Int64,
        scopes: ScopeCursorMap, limit: Int64
    ) {
        self.clientID = clientID
        self.clientGeneration = clientGeneration
        self.schema = schema
        self.scopeSetVersion = scopeSetVersion
        self.scopes = scopes
        self.limit = limit
    }

    public static func parse(json: JSONValue) throws(ExactObjectReader.Violation) -> PullRequest {
        let r = try ExactObjectReader(json, path: "", required: [
            "client_id", "client_generation", "schema", "scope_set_version", "scopes", "limit",
        ])
        return PullRequest(
            clientID: try r.string("client_id"),
            clientGeneration: try r.integer("client_generation", in: ExactObjectReader.positive),
            schema: try r.schemaReference("schema"),
            scopeSetVersion: try r.integer("scope_set_version", in: ExactObjectReader.nonNegative),
            scopes: try ScopeCursorMap(json: try r.object("scopes"), path: "scopes"),
            limit: try r.integer("limit", in: ExactObjectReader.pageLimit))
    }

    public var json: JSONValue {
        .object(JSONObject([
            JSONMember("client_id", .string(clientID)),
            JSONMember("client_generation", .number(JSONNumber(clientGeneration))),
            JSONMember("schema", schema.json),
            JSONMember("scope_set_version", .number(JSONNumber(scopeSetVersion))),
            JSONMember("scopes", scopes.json),
            JSONMember("limit", .number(JSONNumber(limit))),
        ]))
    }
}

/// `POST /sync/rebuild` request (§6.1).
public struct RebuildRequest: Sendable, Equatable {
    public var clientID: String
    public var clientGeneration: Int64
    public var schema: SchemaReference
    public var scope: String
    public var rebuildID: String
    /// nil on the first request of an attempt, then the exact continuation.
    public var cursor: String?
    public var limit: Int64

    public init(
        clientID: String, clientGeneration: Int64, schema: SchemaReference, scope: String, rebuildID: String,
        cursor: String?, limit: Int64
    ) {
        self.clientID = clientID
        self.clientGeneration = clientGeneration
        self.schema = schema
        self.scope = scope
        self.rebuildID = rebuildID
        self.cursor = cursor
        self.limit = limit
    }

    public static func parse(json: JSONValue) throws(ExactObjectReader.Violation) -> RebuildRequest {
        let r = try ExactObjectReader(json, path: "", required: [
            "client_id", "client_generation", "schema", "scope", "rebuild_id", "cursor", "limit",
        ])
        return RebuildRequest(
            clientID: try r.string("client_id"),
            clientGeneration: try r.integer("client_generation", in: ExactObjectReader.positive),
            schema: try r.schemaReference("schema"),
            scope: try r.string("scope"),
            rebuildID: try r.uuid("rebuild_id"),
            cursor: try r.nullableString("cursor"),
            limit: try r.integer("limit", in: ExactObjectReader.pageLimit))
    }

    public var json: JSONValue {
        .object(JSONObject([
            JSONMember("client_id", .string(clientID)),
            JSONMember("client_generation", .number(JSONNumber(clientGeneration))),
            JSONMember("schema", schema.json),
            JSONMember("scope", .string(scope)),
            JSONMember("rebuild_id", .string(rebuildID)),
            JSONMember("cursor", cursor.map(JSONValue.string) ?? .null),
            JSONMember("limit", .number(JSONNumber(limit))),
        ]))
    }
}
