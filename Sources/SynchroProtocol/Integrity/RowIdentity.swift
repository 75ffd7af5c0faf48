/// The octet string that names one row (`spec/integrity.md` §4.3):
/// `ROW_ID_DOMAIN || text(table_id) || text(pk_field_id) || pk_tag || 0x01 || payload(pk)`.
///
/// A value of this type is always structurally valid: it was either encoded from a manifest table
/// and a validated key, or checked octet by octet. Identities order by unsigned octet comparison,
/// the order of a scope digest.
public struct RowIdentity: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// `ROW_ID_DOMAIN` without its trailing zero octet (the writer appends it).
    public static let domain = "synchro:v3:row-identity:v1"

    /// The complete identity octets, domain included.
    public let bytes: [UInt8]

    init(uncheckedBytes bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// Encodes the identity of the row of `table` whose key is `primaryKey` (validated against the
    /// key field's type; never null).
    public init(table: ManifestTable, primaryKey: JSONValue) throws(RowDigestError) {
        var writer = OctetWriter(capacity: table.identityPrefix.count + 16)
        try Self.append(table: table, primaryKey: primaryKey, into: &writer)
        self.bytes = writer.bytes
    }

    /// Encodes the identity of a row of the manifest table `tableID`.
    public init(manifest: SchemaManifest, tableID: String, primaryKey: JSONValue) throws(RowDigestError) {
        guard let table = manifest.table(id: tableID) else { throw .unknownTable(tableID: tableID) }
        try self.init(table: table, primaryKey: primaryKey)
    }

    /// Accepts received identity octets (e.g. scope digest input) only when structurally valid.
    public init(validating bytes: [UInt8]) throws(RowIdentityFormatError) {
        if let failure = Self.structuralFailure(bytes) { throw failure }
        self.bytes = bytes
    }

    /// True for octets a receiver accepts as an identity: the domain, two nonempty UTF-8 texts,
    /// tag 01/02/03, presence 01, exactly the key payload for that tag, and no trailing octets.
    public static func isStructurallyValid(_ bytes: [UInt8]) -> Bool {
        structuralFailure(bytes) == nil
    }

    /// ``isStructurallyValid(_:)`` of octets held elsewhere (a stored column), without copying them.
    public static func isStructurallyValid(_ buffer: UnsafeBufferPointer<UInt8>) -> Bool {
        var reader = IdentityReader(buffer: buffer)
        return (try? reader.check()) != nil
    }

    /// The identity octets as lowercase hex.
    public var hex: String { Hex.encode(bytes) }

    public var description: String { "RowIdentity(\(bytes.count) octets)" }

    public static func < (lhs: RowIdentity, rhs: RowIdentity) -> Bool {
        lhs.compare(rhs) < 0
    }

    /// Unsigned octet order against `other`: negative, zero (the same identity) or positive.
    func compare(_ other: RowIdentity) -> Int {
        bytes.withUnsafeBufferPointer { a in other.bytes.withUnsafeBufferPointer { b in ByteRun.compare(a, b) } }
    }

    /// Writes the identity into `writer`; the row digest uses this to build its preimage in place.
    static func append(
        table: ManifestTable, primaryKey: JSONValue, into writer: inout OctetWriter
    ) throws(RowDigestError) {
        writer.append(table.identityPrefix)
        do throws(PortableValueError) {
            try PortableValue.append(primaryKey, spec: table.primaryKeyField.spec, into: &writer)
        } catch {
            throw .invalidPrimaryKey(error)
        }
    }

    // MARK: - Structural check

    private static let domainOctets: [UInt8] = Array(domain.utf8) + [0]

    /// The first structural rule `bytes` breaks, or nil.
    static func structuralFailure(_ bytes: [UInt8]) -> RowIdentityFormatError? {
        bytes.withUnsafeBufferPointer { buffer in
            var reader = IdentityReader(buffer: buffer)
            do throws(RowIdentityFormatError) {
                try reader.check()
                return nil
            } catch {
                return error
            }
        }
    }

    /// A cursor over received identity octets.
    private struct IdentityReader {
        let buffer: UnsafeBufferPointer<UInt8>
        var position = 0

        var remaining: Int { buffer.count - position }

        mutating func check() throws(RowIdentityFormatError) {
            let domain = RowIdentity.domainOctets
            let prefixLength = min(domain.count, buffer.count)
            let domainMatches = domain.withUnsafeBufferPointer { expected in
                (0..<prefixLength).allSatisfy { buffer[$0] == expected[$0] }
            }
            guard domainMatches else { throw .wrongDomain }
            guard buffer.count >= domain.count else { throw .truncated }
            position = domain.count
            try text(emptyFailure: .emptyTableID, exactlyToEnd: false)
            try text(emptyFailure: .emptyFieldID, exactlyToEnd: false)
            guard remaining >= 2 else { throw .truncated }
            let tag = buffer[position]
            guard let type = PortableType(tag: tag), type.isKeyType else { throw .invalidTag }
            guard buffer[position + 1] == 0x01 else { throw .invalidPresence }
            position += 2
            switch type {
            case .int: try fixed(4)
            case .int64: try fixed(8)
            default: try text(emptyFailure: nil, exactlyToEnd: true)
            }
        }

        /// `u64be(length) || UTF-8`; the key text must end exactly at the last octet.
        private mutating func text(
            emptyFailure: RowIdentityFormatError?, exactlyToEnd: Bool
        ) throws(RowIdentityFormatError) {
            guard remaining >= 8 else { throw .truncated }
            var length: UInt64 = 0
            for i in 0..<8 { length = length << 8 | UInt64(buffer[position + i]) }
            position += 8
            guard length <= UInt64(remaining) else { throw .truncated }
            let count = Int(length)
            if count == 0, let emptyFailure { throw emptyFailure }
            if exactlyToEnd && count < remaining { throw .trailingOctets }
            let text = UnsafeBufferPointer(rebasing: buffer[position..<(position + count)])
            // ASCII (every table and field ID in practice) is valid UTF-8 without building a String.
            guard text.allSatisfy({ $0 < 0x80 }) || String(validating: text, as: UTF8.self) != nil else {
                throw .invalidUTF8
            }
            position += count
        }

        private mutating func fixed(_ count: Int) throws(RowIdentityFormatError) {
            guard remaining >= count else { throw .truncated }
            guard remaining == count else { throw .trailingOctets }
            position += count
        }
    }
}

/// Why received octets are not a structurally valid row identity (`spec/integrity.md` §4.3).
public enum RowIdentityFormatError: Error, Sendable, Hashable, CustomStringConvertible {
    case wrongDomain
    /// The octets end before the structure does (a length prefix promises more than is left).
    case truncated
    case emptyTableID
    case emptyFieldID
    /// A table ID, field ID or key text is not valid UTF-8.
    case invalidUTF8
    /// The key tag is not 01 (string), 02 (int) or 03 (int64).
    case invalidTag
    /// The key presence octet is not 01 (a key is never null).
    case invalidPresence
    /// Octets follow the end of the key payload.
    case trailingOctets

    /// Stable snake_case name of the broken rule.
    public var rule: String {
        switch self {
        case .wrongDomain: "identity_wrong_domain"
        case .truncated: "identity_truncated"
        case .emptyTableID: "identity_empty_table_id"
        case .emptyFieldID: "identity_empty_field_id"
        case .invalidUTF8: "identity_invalid_utf8"
        case .invalidTag: "identity_invalid_tag"
        case .invalidPresence: "identity_invalid_presence"
        case .trailingOctets: "identity_trailing_octets"
        }
    }

    public var description: String {
        switch self {
        case .wrongDomain: "row identity does not start with the row-identity domain"
        case .truncated: "row identity ends before its structure does"
        case .emptyTableID: "row identity has an empty table ID"
        case .emptyFieldID: "row identity has an empty key field ID"
        case .invalidUTF8: "row identity text is not valid UTF-8"
        case .invalidTag: "row identity key tag is not string, int or int64"
        case .invalidPresence: "row identity key is marked null"
        case .trailingOctets: "row identity has octets after the key"
        }
    }
}
