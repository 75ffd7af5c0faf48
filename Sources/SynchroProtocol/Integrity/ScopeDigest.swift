/// A computed scope digest with its preimage (`spec/integrity.md` §4.6):
///
/// `SHA-256(SCOPE_DOMAIN || schema_hash_raw || text(scope_id) || u64be(cardinality)
///  || for each row in ascending identity octet order: blob(row_identity) || row_digest)`
public struct ScopeDigest: Sendable, Equatable {
    /// `SCOPE_DOMAIN` without its trailing zero octet (the writer appends it).
    public static let domain = "synchro:v3:scope-digest:v1"

    /// The exact octets that were hashed, domain included.
    public let preimage: [UInt8]
    /// The 32 raw digest octets.
    public let digest: [UInt8]

    /// The digest as 64 lowercase hex characters.
    public var hex: String { Hex.encode(digest) }

    /// The wire checksum object carrying this digest (`checksums` values, final rebuild `checksum`).
    public var checksum: Checksum { Checksum(validDigest: digest) }

    /// Digests a scope from identities already known to be well formed, in any order.
    public static func compute(
        schemaHash: [UInt8], scopeID: String, entries: [(identity: RowIdentity, rowDigest: [UInt8])]
    ) throws(ScopeDigestError) -> ScopeDigest {
        try checkHeader(schemaHash: schemaHash, scopeID: scopeID)
        for (i, entry) in entries.enumerated() where entry.rowDigest.count != 32 {
            throw .invalidRowDigest(entry: i)
        }
        let order = entries.indices.sorted { entries[$0].identity < entries[$1].identity }
        for (previous, current) in zip(order, order.dropFirst())
        where entries[previous].identity == entries[current].identity {
            throw .duplicateIdentity(entry: max(previous, current))
        }
        let size = entries.reduce(0) { $0 + 8 + $1.identity.bytes.count + 32 }
        var writer = OctetWriter(domain: domain, capacity: 80 + scopeID.utf8.count + size)
        writer.append(schemaHash)
        writer.appendText(scopeID)
        writer.appendU64BE(UInt64(entries.count))
        for i in order {
            writer.appendBlob(entries[i].identity.bytes)
            writer.append(entries[i].rowDigest)
        }
        return ScopeDigest(preimage: writer.bytes, digest: SHA256.hash(writer.bytes))
    }

    /// Digests a scope from received octets, checking each identity's structure first.
    public static func compute(
        schemaHash: [UInt8], scopeID: String, rawEntries: [(identity: [UInt8], rowDigest: [UInt8])]
    ) throws(ScopeDigestError) -> ScopeDigest {
        try checkHeader(schemaHash: schemaHash, scopeID: scopeID)
        var entries: [(identity: RowIdentity, rowDigest: [UInt8])] = []
        entries.reserveCapacity(rawEntries.count)
        for (i, raw) in rawEntries.enumerated() {
            do throws(RowIdentityFormatError) {
                entries.append((try RowIdentity(validating: raw.identity), raw.rowDigest))
            } catch {
                throw .invalidIdentity(entry: i, error)
            }
        }
        return try compute(schemaHash: schemaHash, scopeID: scopeID, entries: entries)
    }

    /// Digests a scope given in hex, as vectors and the CLI spell it: a 64-hex schema hash and
    /// pairs of identity hex and 64-hex row digest.
    public static func compute(
        schemaHashHex: String, scopeID: String, hexEntries: [(identity: String, rowDigest: String)]
    ) throws(ScopeDigestError) -> ScopeDigest {
        guard Hex.isLowercaseHex(schemaHashHex, octets: 32), let schemaHash = Hex.decode(schemaHashHex) else {
            throw .invalidSchemaHash
        }
        var raw: [(identity: [UInt8], rowDigest: [UInt8])] = []
        raw.reserveCapacity(hexEntries.count)
        for (i, entry) in hexEntries.enumerated() {
            guard let identity = Hex.decode(entry.identity) else { throw .malformedHex(entry: i) }
            guard Hex.isLowercaseHex(entry.rowDigest, octets: 32), let digest = Hex.decode(entry.rowDigest) else {
                throw .invalidRowDigest(entry: i)
            }
            raw.append((identity, digest))
        }
        return try compute(schemaHash: schemaHash, scopeID: scopeID, rawEntries: raw)
    }

    static func checkHeader(schemaHash: [UInt8], scopeID: String) throws(ScopeDigestError) {
        guard schemaHash.count == 32 else { throw .invalidSchemaHash }
        guard !scopeID.utf8.isEmpty else { throw .emptyScopeID }
    }
}

/// Streams a scope digest for callers that already produce rows in ascending identity order
/// (a sorted index, a seed table scan), without holding the scope in memory.
///
/// The cardinality precedes the rows in the preimage, so it is declared up front and checked
/// when the digest is finalized. Out-of-order or repeated identities are rejected as they arrive.
public struct ScopeDigestAccumulator: ~Copyable, Sendable {
    private var hasher = SHA256()
    private let cardinality: UInt64
    private var count: UInt64 = 0
    private var previous: RowIdentity?

    /// Starts the digest of scope `scopeID` holding exactly `cardinality` rows.
    public init(schemaHash: [UInt8], scopeID: String, cardinality: UInt64) throws(ScopeDigestError) {
        try ScopeDigest.checkHeader(schemaHash: schemaHash, scopeID: scopeID)
        self.cardinality = cardinality
        var header = OctetWriter(domain: ScopeDigest.domain, capacity: 80 + scopeID.utf8.count)
        header.append(schemaHash)
        header.appendText(scopeID)
        header.appendU64BE(cardinality)
        hasher.update(header.bytes)
    }

    /// Number of rows added so far.
    public var rowCount: UInt64 { count }

    /// Adds the next row; its identity must sort strictly after the previous one.
    public mutating func add(identity: RowIdentity, rowDigest: [UInt8]) throws(ScopeDigestError) {
        let entry = Int(count)
        guard rowDigest.count == 32 else { throw .invalidRowDigest(entry: entry) }
        if let previous {
            if previous == identity { throw .duplicateIdentity(entry: entry) }
            guard previous < identity else { throw .outOfOrder(entry: entry) }
        }
        guard count < cardinality else { throw .cardinalityMismatch(declared: cardinality, actual: count + 1) }
        withUnsafeBytes(of: UInt64(identity.bytes.count).bigEndian) { hasher.update($0) }
        hasher.update(identity.bytes)
        hasher.update(rowDigest)
        count += 1
        previous = identity
    }

    /// The 32-octet scope digest; throws when fewer rows than declared were added.
    public consuming func finalize() throws(ScopeDigestError) -> [UInt8] {
        guard count == cardinality else { throw .cardinalityMismatch(declared: cardinality, actual: count) }
        return hasher.finalize()
    }
}

/// Why a scope digest cannot be computed; `entry` is the input position of the offending row.
public enum ScopeDigestError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The schema hash is not 32 octets (64 lowercase hex characters).
    case invalidSchemaHash
    case emptyScopeID
    /// An identity is not hex at all (odd length, upper case, other characters).
    case malformedHex(entry: Int)
    /// An identity's octets are not a structurally valid row identity.
    case invalidIdentity(entry: Int, RowIdentityFormatError)
    /// A row digest is not exactly 32 octets (64 lowercase hex characters).
    case invalidRowDigest(entry: Int)
    /// The same identity occurs twice in one scope.
    case duplicateIdentity(entry: Int)
    /// A streamed identity does not sort after the previous one.
    case outOfOrder(entry: Int)
    /// The number of rows streamed differs from the declared cardinality.
    case cardinalityMismatch(declared: UInt64, actual: UInt64)

    /// Stable snake_case name of the broken rule.
    public var rule: String {
        switch self {
        case .invalidSchemaHash: "invalid_schema_hash"
        case .emptyScopeID: "empty_scope_id"
        case .malformedHex: "malformed_hex"
        case .invalidIdentity: "invalid_identity"
        case .invalidRowDigest: "invalid_row_digest"
        case .duplicateIdentity: "duplicate_identity"
        case .outOfOrder: "out_of_order"
        case .cardinalityMismatch: "cardinality_mismatch"
        }
    }

    public var description: String {
        switch self {
        case .invalidSchemaHash: "schema hash must be 32 octets (64 lowercase hex characters)"
        case .emptyScopeID: "scope ID must not be empty"
        case .malformedHex(let i): "entry \(i): row identity is not lowercase hex"
        case .invalidIdentity(let i, let error): "entry \(i): \(error)"
        case .invalidRowDigest(let i): "entry \(i): row digest must be 32 octets (64 lowercase hex characters)"
        case .duplicateIdentity(let i): "entry \(i): row identity occurs twice in the scope"
        case .outOfOrder(let i): "entry \(i): row identity does not sort after the previous one"
        case .cardinalityMismatch(let declared, let actual): "scope declared \(declared) rows but has \(actual)"
        }
    }
}
