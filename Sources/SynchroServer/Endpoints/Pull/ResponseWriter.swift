import SynchroProtocol

/// Writes pull and rebuild response bodies straight to octets.
///
/// Rows and keys are stored as canonical JSON, so they are spliced in as stored instead of being
/// parsed and encoded again: the body of a 1,000-row page costs one copy per row. Any valid JSON
/// layout is acceptable to clients (`spec/wire-protocol.md` §1.5); member order follows the spec's
/// tables.
struct ResponseWriter {
    private(set) var bytes: [UInt8] = []

    init(capacity: Int = 4096) {
        bytes.reserveCapacity(capacity)
    }

    mutating func raw(_ text: StaticString) {
        bytes.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// A JSON string with RFC 8785 escaping.
    mutating func string(_ value: String) throws {
        try CanonicalJSON.appendString(value, to: &bytes)
    }

    mutating func integer(_ value: Int64) {
        bytes.append(contentsOf: String(value).utf8)
    }

    mutating func bool(_ value: Bool) {
        if value { raw("true") } else { raw("false") }
    }

    /// Octets that already are one canonical JSON value (a stored row or key).
    mutating func splice(_ json: [UInt8]) {
        bytes.append(contentsOf: json)
    }

    /// Octets that already are one canonical JSON value, read in place from a statement's column.
    mutating func splice(_ json: UnsafeRawBufferPointer) {
        bytes.append(contentsOf: json)
    }

    /// The JSON string of stored text that is printable ASCII without `"` or `\` (a server
    /// version always is: `spec/wire-protocol.md` §2.8), copied as is because RFC 8785 escapes
    /// none of it. Returns false, writing nothing, for any other text: the caller then takes the
    /// escaping path.
    mutating func plainASCIIString(_ text: UnsafeBufferPointer<UInt8>) -> Bool {
        guard text.allSatisfy({ (0x20...0x7E).contains($0) && $0 != 0x22 && $0 != 0x5C }) else { return false }
        bytes.append(0x22)
        bytes.append(contentsOf: text)
        bytes.append(0x22)
        return true
    }

    /// `"name":` — the member names used here are ASCII protocol names that need no escaping.
    mutating func key(_ name: StaticString) {
        raw("\"")
        raw(name)
        raw("\":")
    }

    /// The checksum object of a 32-octet digest (`spec/wire-protocol.md` §2.9).
    mutating func checksum(_ digest: [UInt8]) {
        digest.withUnsafeBytes { checksum($0) }
    }

    /// The checksum object of a digest read in place from a statement's column.
    mutating func checksum(_ digest: UnsafeRawBufferPointer) {
        raw(#"{"algorithm":"sha256","version":1,"encoding":"hex","digest":""#)
        lowercaseHex(digest)
        raw(#""}"#)
    }

    /// Lowercase hex straight into the body: one table lookup per nibble, no intermediate string
    /// (a 1,000-record page writes 1,000 digests).
    private mutating func lowercaseHex(_ octets: UnsafeRawBufferPointer) {
        let digits: StaticString = "0123456789abcdef"
        digits.withUTF8Buffer { table in
            for octet in octets {
                bytes.append(table[Int(octet >> 4)])
                bytes.append(table[Int(octet & 0x0F)])
            }
        }
    }

    /// The wire `pk` object `{"<pk field>": <key>}` from the stored canonical key value.
    mutating func primaryKey(fieldID: String, value: [UInt8]) throws {
        raw("{")
        try string(fieldID)
        raw(":")
        splice(value)
        raw("}")
    }

    /// A JSON array of strings.
    mutating func stringArray(_ values: [String]) throws {
        raw("[")
        for (i, value) in values.enumerated() {
            if i > 0 { raw(",") }
            try string(value)
        }
        raw("]")
    }
}

/// The key field of each manifest table, looked up once per table ID for the row loops.
struct PrimaryKeyFields {
    private let manifest: SchemaManifest
    private var fields: [ExactKey: String] = [:]

    init(manifest: SchemaManifest) {
        self.manifest = manifest
    }

    /// The key field ID of `tableID`; a stored row of a table the manifest lacks is an integrity failure.
    mutating func fieldID(table tableID: String) throws -> String {
        let key = ExactKey(tableID)
        if let known = fields[key] { return known }
        guard let table = manifest.table(id: tableID) else { throw SyncIntegrityViolation() }
        fields[key] = table.primaryKeyFieldID
        return table.primaryKeyFieldID
    }
}
