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

    /// `"name":` — the member names used here are ASCII protocol names that need no escaping.
    mutating func key(_ name: StaticString) {
        raw("\"")
        raw(name)
        raw("\":")
    }

    /// The checksum object of a 32-octet digest (`spec/wire-protocol.md` §2.9).
    mutating func checksum(_ digest: [UInt8]) {
        raw(#"{"algorithm":"sha256","version":1,"encoding":"hex","digest":""#)
        bytes.append(contentsOf: Hex.encode(digest).utf8)
        raw(#""}"#)
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
