/// Why a decoded token payload does not have the exact member set of its kind
/// (`spec/integrity.md` §7.2–§7.3). Descriptions name members, never their values.
public enum SeedPayloadError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The token is of the other kind (a receipt where a page token was expected, or vice versa).
    case wrongTokenKind(expected: SeedTokenKind, found: SeedTokenKind)
    /// A required member is absent.
    case missingMember(String)
    /// A member outside the exact member set is present.
    case unknownMember
    /// The `kind` member is not the payload kind expected.
    case wrongPayloadKind
    /// The `version` member is not the integer 1.
    case unsupportedVersion
    /// A member has the wrong type or form (the name is the protocol member name).
    case invalidMember(String)

    /// The stable snake_case name of the broken rule.
    public var rule: String {
        switch self {
        case .wrongTokenKind: "wrong_token_kind"
        case .missingMember: "missing_member"
        case .unknownMember: "unknown_member"
        case .wrongPayloadKind: "wrong_payload_kind"
        case .unsupportedVersion: "unsupported_version"
        case .invalidMember: "invalid_member"
        }
    }

    public var description: String {
        let detail =
            switch self {
            case .wrongTokenKind(let expected, let found): "expected a \(expected.prefix) token, found \(found.prefix)"
            case .missingMember(let name): "required member \(name) is absent"
            case .unknownMember: "the payload has a member outside its exact member set"
            case .wrongPayloadKind: "the kind member does not name this payload kind"
            case .unsupportedVersion: "the version member is not 1"
            case .invalidMember(let name): "member \(name) has the wrong type or form"
            }
        return "invalid seed token payload: \(rule): \(detail)"
    }
}

/// The export's snapshot boundary: `{"position_kind":"generation_start"}` or
/// `{"position_kind":"transaction_end","commit_lsn":"<X/Y>"}`.
public enum SeedSnapshotBoundary: Sendable, Hashable {
    case generationStart
    /// The LSN is kept as the server's nonempty text; it is compared, never interpreted.
    case transactionEnd(commitLSN: String)

    /// Parses the exact boundary object.
    public init(json: JSONValue) throws(SeedPayloadError) {
        let invalid = SeedPayloadError.invalidMember("snapshot_boundary")
        guard case .object(let object) = json, let kind = object["position_kind"]?.stringValue else { throw invalid }
        if kind.exactlyEquals("generation_start") && object.count == 1 {
            self = .generationStart
        } else if kind.exactlyEquals("transaction_end"), object.count == 2,
            let lsn = object["commit_lsn"]?.stringValue, !lsn.isEmpty
        {
            self = .transactionEnd(commitLSN: lsn)
        } else {
            throw invalid
        }
    }

    /// The boundary object.
    public var json: JSONValue {
        switch self {
        case .generationStart:
            .object(JSONObject([JSONMember("position_kind", .string("generation_start"))]))
        case .transactionEnd(let lsn):
            .object(JSONObject([
                JSONMember("position_kind", .string("transaction_end")), JSONMember("commit_lsn", .string(lsn)),
            ]))
        }
    }

    public static func == (lhs: SeedSnapshotBoundary, rhs: SeedSnapshotBoundary) -> Bool {
        lhs.json == rhs.json
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(json)
    }
}

/// The payload of a page token `sp1.…` (`spec/integrity.md` §7.2): the export, scope and position
/// of the next page. Counters are canonical unsigned decimal strings in the token, u64 here.
public struct SeedPagePayload: Sendable, Hashable, CustomStringConvertible {
    /// The payload `kind` value.
    public static let kind = "portable_seed_page"

    /// Names the server key that made the MAC.
    public let keyID: String
    /// The export (lowercase UUID) the token belongs to.
    public let exportID: String
    /// base64url of 32 random octets, binding the token to one export transaction.
    public let transactionNonce: String
    /// The 64-hex export manifest hash (`spec/integrity.md` §7.2).
    public let exportManifestHash: String
    /// The 64-hex hash of the manifest the export used.
    public let schemaHash: String
    /// The portable scope.
    public let scopeID: String
    /// Scope registry generation at export.
    public let registryGeneration: UInt64
    /// Membership generation at export.
    public let membershipGeneration: UInt64
    /// Retention generation at export.
    public let retentionGeneration: UInt64
    /// Stream generation at export.
    public let streamGeneration: UInt64
    /// The consistent snapshot the export read.
    public let snapshotBoundary: SeedSnapshotBoundary
    /// Ordinal of the first row of the page this token fetches.
    public let nextRowOrdinal: UInt64
    /// Rows per page, fixed for the export.
    public let pageLimit: UInt64
    /// The payload object these members were read from.
    public let payload: JSONObject

    private static let members = [
        "kind", "version", "key_id", "export_id", "transaction_nonce", "export_manifest_hash", "schema_hash",
        "scope_id", "registry_generation", "membership_generation", "retention_generation", "stream_generation",
        "snapshot_boundary", "next_row_ordinal", "page_limit",
    ]

    /// Reads the typed view of a decoded page token.
    public init(token: SeedToken) throws(SeedPayloadError) {
        guard token.kind == .page else { throw .wrongTokenKind(expected: .page, found: token.kind) }
        try self.init(payload: token.payload)
    }

    /// Checks the exact member set and every member's form.
    public init(payload: JSONObject) throws(SeedPayloadError) {
        let reader = try SeedPayloadReader(payload, members: Self.members, kind: Self.kind)
        keyID = try reader.nonemptyString("key_id")
        exportID = try reader.uuid("export_id")
        transactionNonce = try reader.nonce("transaction_nonce")
        exportManifestHash = try reader.hash("export_manifest_hash")
        schemaHash = try reader.hash("schema_hash")
        scopeID = try reader.nonemptyString("scope_id")
        registryGeneration = try reader.counter("registry_generation")
        membershipGeneration = try reader.counter("membership_generation")
        retentionGeneration = try reader.counter("retention_generation")
        streamGeneration = try reader.counter("stream_generation")
        snapshotBoundary = try SeedSnapshotBoundary(json: reader.value("snapshot_boundary"))
        nextRowOrdinal = try reader.counter("next_row_ordinal")
        pageLimit = try reader.counter("page_limit")
        self.payload = payload
    }

    /// Position only; keys and IDs stay out of logs.
    public var description: String {
        "SeedPagePayload(next row ordinal \(nextRowOrdinal), page limit \(pageLimit))"
    }

    public static func == (lhs: SeedPagePayload, rhs: SeedPagePayload) -> Bool { lhs.payload == rhs.payload }

    public func hash(into hasher: inout Hasher) { hasher.combine(payload) }
}

/// The payload of a continuation receipt `sc1.…` (`spec/integrity.md` §7.3): what one portable
/// scope was exported at. It binds no user and no client.
public struct SeedContinuationPayload: Sendable, Hashable, CustomStringConvertible {
    /// The payload `kind` value.
    public static let kind = "portable_seed_continuation"

    /// Names the server key that made the MAC.
    public let keyID: String
    /// The export (lowercase UUID) the token belongs to.
    public let exportID: String
    /// The 64-hex export manifest hash (`spec/integrity.md` §7.2).
    public let exportManifestHash: String
    /// The 64-hex hash of the manifest the export used.
    public let schemaHash: String
    /// The portable scope.
    public let scopeID: String
    /// Scope registry generation at export.
    public let registryGeneration: UInt64
    /// Membership generation at export.
    public let membershipGeneration: UInt64
    /// Retention generation at export.
    public let retentionGeneration: UInt64
    /// Stream generation at export.
    public let streamGeneration: UInt64
    /// The consistent snapshot the export read.
    public let snapshotBoundary: SeedSnapshotBoundary
    /// Number of rows in the scope at export.
    public let cardinality: UInt64
    /// The 64-hex scope digest of the exact checksum object `{algorithm, version, encoding, digest}`.
    public let checksumDigest: String
    /// Canonical `datetime` of issue.
    public let issuedAt: String
    /// The payload object these members were read from.
    public let payload: JSONObject

    private static let members = [
        "kind", "version", "key_id", "export_id", "export_manifest_hash", "schema_hash", "scope_id",
        "registry_generation", "membership_generation", "retention_generation", "stream_generation",
        "snapshot_boundary", "cardinality", "checksum", "issued_at",
    ]

    /// Reads the typed view of a decoded continuation receipt.
    public init(token: SeedToken) throws(SeedPayloadError) {
        guard token.kind == .continuation else { throw .wrongTokenKind(expected: .continuation, found: token.kind) }
        try self.init(payload: token.payload)
    }

    /// Checks the exact member set and every member's form.
    public init(payload: JSONObject) throws(SeedPayloadError) {
        let reader = try SeedPayloadReader(payload, members: Self.members, kind: Self.kind)
        keyID = try reader.nonemptyString("key_id")
        exportID = try reader.uuid("export_id")
        exportManifestHash = try reader.hash("export_manifest_hash")
        schemaHash = try reader.hash("schema_hash")
        scopeID = try reader.nonemptyString("scope_id")
        registryGeneration = try reader.counter("registry_generation")
        membershipGeneration = try reader.counter("membership_generation")
        retentionGeneration = try reader.counter("retention_generation")
        streamGeneration = try reader.counter("stream_generation")
        snapshotBoundary = try SeedSnapshotBoundary(json: reader.value("snapshot_boundary"))
        cardinality = try reader.counter("cardinality")
        checksumDigest = try reader.checksumDigest("checksum")
        issuedAt = try reader.timestamp("issued_at")
        self.payload = payload
    }

    /// Cardinality only; keys and IDs stay out of logs.
    public var description: String { "SeedContinuationPayload(cardinality \(cardinality))" }

    public static func == (lhs: SeedContinuationPayload, rhs: SeedContinuationPayload) -> Bool {
        lhs.payload == rhs.payload
    }

    public func hash(into hasher: inout Hasher) { hasher.combine(payload) }
}

/// Exact-member reading for token payloads; all lookups compare names by exact scalars.
struct SeedPayloadReader {
    private let object: JSONObject

    /// Checks presence of every member (in the listed order), no extra member, `kind` and `version`.
    init(_ object: JSONObject, members: [String], kind: String) throws(SeedPayloadError) {
        if let missing = members.first(where: { object[$0] == nil }) { throw .missingMember(missing) }
        // Every listed member is present, so any surplus count means a member outside the set.
        guard object.count == members.count else { throw .unknownMember }
        self.object = object
        guard let kindValue = object["kind"]?.stringValue, kindValue.exactlyEquals(kind) else {
            throw .wrongPayloadKind
        }
        guard case .number(let version)? = object["version"], version.isIntegerLiteral, version.exactInt64 == 1,
            !version.isNegativeZeroLiteral
        else { throw .unsupportedVersion }
    }

    func value(_ name: String) throws(SeedPayloadError) -> JSONValue {
        guard let value = object[name] else { throw .missingMember(name) }
        return value
    }

    func string(_ name: String) throws(SeedPayloadError) -> String {
        guard let text = try value(name).stringValue else { throw .invalidMember(name) }
        return text
    }

    func nonemptyString(_ name: String) throws(SeedPayloadError) -> String {
        let text = try string(name)
        guard !text.isEmpty else { throw .invalidMember(name) }
        return text
    }

    func uuid(_ name: String) throws(SeedPayloadError) -> String {
        let text = try string(name)
        guard WireFormats.isCanonicalUUID(text) else { throw .invalidMember(name) }
        return text
    }

    func hash(_ name: String) throws(SeedPayloadError) -> String {
        let text = try string(name)
        guard Hex.isLowercaseHex(text, octets: 32) else { throw .invalidMember(name) }
        return text
    }

    func nonce(_ name: String) throws(SeedPayloadError) -> String {
        let text = try string(name)
        guard Base64URL.decode(text)?.count == 32 else { throw .invalidMember(name) }
        return text
    }

    func timestamp(_ name: String) throws(SeedPayloadError) -> String {
        let text = try string(name)
        guard WireFormats.isTimestamp(text) else { throw .invalidMember(name) }
        return text
    }

    /// A canonical unsigned decimal string (`0`, or no leading zero) within u64.
    func counter(_ name: String) throws(SeedPayloadError) -> UInt64 {
        let text = try string(name)
        let digits = Array(text.utf8)
        guard !digits.isEmpty, digits.allSatisfy({ $0 &- UInt8(ascii: "0") < 10 }),
            digits.count == 1 || digits[0] != UInt8(ascii: "0"), let value = UInt64(text)
        else { throw .invalidMember(name) }
        return value
    }

    /// The exact scope-digest object `{"algorithm":"sha256","version":1,"encoding":"hex","digest":…}`.
    func checksumDigest(_ name: String) throws(SeedPayloadError) -> String {
        guard case .object(let checksum) = try value(name), checksum.count == 4,
            checksum["algorithm"]?.stringValue?.exactlyEquals("sha256") == true,
            checksum["encoding"]?.stringValue?.exactlyEquals("hex") == true,
            case .number(let version)? = checksum["version"], version.literal.exactlyEquals("1"),
            let digest = checksum["digest"]?.stringValue, Hex.isLowercaseHex(digest, octets: 32)
        else { throw .invalidMember(name) }
        return digest
    }
}
