/// The wire form of every row or scope digest (`spec/integrity.md` §4.7, `spec/wire-protocol.md` §2.9):
/// exactly `{"algorithm":"sha256","version":1,"encoding":"hex","digest":"<64 lowercase hex>"}`.
public struct Checksum: Sendable, Hashable, CustomStringConvertible {
    /// The 32 raw digest octets.
    public let digest: [UInt8]

    init(validDigest digest: [UInt8]) {
        self.digest = digest
    }

    /// Wraps a 32-octet SHA-256 digest.
    public init(digest: [UInt8]) throws(ChecksumError) {
        guard digest.count == 32 else { throw .invalidDigest }
        self.digest = digest
    }

    /// Parses the exact wire object: all four members, nothing else, `version` the plain number `1`.
    public init(json: JSONValue) throws(ChecksumError) {
        guard case .object(let object) = json else { throw .notAnObject }
        let names = ["algorithm", "version", "encoding", "digest"]
        var values: [JSONValue?] = [nil, nil, nil, nil]
        for member in object.members {
            guard let i = names.firstIndex(where: member.key.exactlyEquals) else { throw .unknownMember(member.key) }
            guard values[i] == nil else { throw .duplicateMember(names[i]) }
            values[i] = member.value
        }
        for (i, name) in names.enumerated() where values[i] == nil { throw .missingMember(name) }
        guard case .string(let algorithm)? = values[0], algorithm.exactlyEquals("sha256") else {
            throw .wrongAlgorithm
        }
        guard case .number(let version)? = values[1], version.literal.exactlyEquals("1") else { throw .wrongVersion }
        guard case .string(let encoding)? = values[2], encoding.exactlyEquals("hex") else { throw .wrongEncoding }
        guard case .string(let hex)? = values[3], Hex.isLowercaseHex(hex, octets: 32), let octets = Hex.decode(hex)
        else { throw .invalidDigest }
        self.digest = octets
    }

    /// The digest as 64 lowercase hex characters.
    public var hex: String { Hex.encode(digest) }

    /// The wire object, members in the order the protocol documents them.
    public var json: JSONValue {
        .object(JSONObject([
            JSONMember("algorithm", .string("sha256")),
            JSONMember("version", .number(JSONNumber(1))),
            JSONMember("encoding", .string("hex")),
            JSONMember("digest", .string(hex)),
        ]))
    }

    public var description: String { "sha256:\(hex)" }
}

/// Why a checksum object is rejected; `rule` is the stable name used in reports.
public enum ChecksumError: Error, Sendable, Hashable, CustomStringConvertible {
    case notAnObject
    case missingMember(String)
    case unknownMember(String)
    case duplicateMember(String)
    /// `algorithm` is not the string `sha256`.
    case wrongAlgorithm
    /// `version` is not the plain JSON number `1`.
    case wrongVersion
    /// `encoding` is not the string `hex`.
    case wrongEncoding
    /// `digest` is not 64 lowercase hex characters (32 octets).
    case invalidDigest

    /// Stable snake_case name of the broken rule.
    public var rule: String {
        switch self {
        case .notAnObject: "not_an_object"
        case .missingMember: "missing_member"
        case .unknownMember: "unknown_member"
        case .duplicateMember: "duplicate_member"
        case .wrongAlgorithm: "wrong_algorithm"
        case .wrongVersion: "wrong_version"
        case .wrongEncoding: "wrong_encoding"
        case .invalidDigest: "invalid_digest"
        }
    }

    public var description: String {
        switch self {
        case .notAnObject: "checksum is not a JSON object"
        case .missingMember(let name): "checksum lacks member \(name)"
        case .unknownMember(let name): "checksum has unknown member \(name)"
        case .duplicateMember(let name): "checksum repeats member \(name)"
        case .wrongAlgorithm: "checksum algorithm must be sha256"
        case .wrongVersion: "checksum version must be the number 1"
        case .wrongEncoding: "checksum encoding must be hex"
        case .invalidDigest: "checksum digest must be 64 lowercase hex characters"
        }
    }
}
