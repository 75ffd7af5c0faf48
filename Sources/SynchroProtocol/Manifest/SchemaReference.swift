/// `{"version": <positive integer>, "hash": "<64 lowercase hex>"}`: names one immutable manifest
/// (`spec/wire-protocol.md` §2.5).
public struct SchemaReference: Sendable, Hashable {
    /// Largest protocol integer, 2^53 − 1 (`spec/wire-protocol.md` §2.2).
    public static let maxProtocolInteger: Int64 = 9_007_199_254_740_991

    public let version: Int64
    public let hash: String

    /// Why a JSON value is not a schema reference.
    public enum Failure: Error, Sendable, Equatable, CustomStringConvertible {
        case notAnObject
        case missingMember(String)
        case unknownMember
        case versionNotPositiveInteger
        case hashNotLowercaseHex64

        public var description: String {
            switch self {
            case .notAnObject: "schema reference is not an object"
            case .missingMember(let name): "schema reference lacks member \(name)"
            case .unknownMember: "schema reference has a member other than version and hash"
            case .versionNotPositiveInteger: "schema reference version is not an integer in 1...2^53-1"
            case .hashNotLowercaseHex64: "schema reference hash is not 64 lowercase hex characters"
            }
        }
    }

    /// A validated reference. Version 1...2^53−1 and a 64-character lowercase hex hash.
    public init(version: Int64, hash: String) throws(Failure) {
        guard version >= 1 && version <= Self.maxProtocolInteger else { throw .versionNotPositiveInteger }
        guard Hex.isLowercaseHex(hash, octets: 32) else { throw .hashNotLowercaseHex64 }
        self.version = version
        self.hash = hash
    }

    /// Parses the exact object: both members, nothing else (the fresh sentinel is not accepted here).
    public init(json: JSONValue) throws(Failure) {
        guard case .object(let object) = json else { throw .notAnObject }
        guard let versionValue = object["version"] else { throw .missingMember("version") }
        guard let hashValue = object["hash"] else { throw .missingMember("hash") }
        guard object.count == 2 else { throw .unknownMember }
        guard case .number(let n) = versionValue, !n.isNegativeZeroLiteral, let v = n.exactInt64 else {
            throw .versionNotPositiveInteger
        }
        guard case .string(let h) = hashValue else { throw .hashNotLowercaseHex64 }
        try self.init(version: v, hash: h)
    }

    /// The wire object.
    public var json: JSONValue {
        .object(JSONObject(["version": .number(JSONNumber(version)), "hash": .string(hash)]))
    }

    /// The 32 raw octets of the hash, as the digests use them.
    public var hashOctets: [UInt8] { Hex.decode(hash)! }
}
