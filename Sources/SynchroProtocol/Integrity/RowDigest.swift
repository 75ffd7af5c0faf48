/// A computed row digest with everything that went into it (`spec/integrity.md` §4.4–§4.5):
///
/// `SHA-256(ROW_DIGEST_DOMAIN || schema_hash_raw || blob(row_identity) || blob(row_body) || text(server_version))`
public struct RowDigest: Sendable, Equatable {
    /// `ROW_DIGEST_DOMAIN` without its trailing zero octet (the writer appends it).
    public static let domain = "synchro:v3:row-digest:v1"

    /// `row_identity`: domain, table ID, key field ID and typed key.
    public let identity: RowIdentity
    /// `u32be(field_count) || text(field_id) || typed(value)` for every field in ID order.
    public let body: [UInt8]
    /// The exact octets that were hashed, domain included.
    public let preimage: [UInt8]
    /// The 32 raw digest octets.
    public let digest: [UInt8]

    /// The digest as 64 lowercase hex characters.
    public var hex: String { Hex.encode(digest) }

    /// The wire checksum object carrying this digest (`row_checksum`).
    public var checksum: Checksum { Checksum(validDigest: digest) }

    /// Validates a complete row against its manifest table and computes its digest.
    ///
    /// Checks, in order: known table, valid key, exact field set (no unknown, duplicate or
    /// missing field), valid typed values, key member encoding identically to `primaryKey`, and
    /// a nonempty `serverVersion`. The row's members may come in any order.
    public static func compute(
        manifest: SchemaManifest, tableID: String, primaryKey: JSONValue, row: JSONValue, serverVersion: String
    ) throws(RowDigestError) -> RowDigest {
        var digester = RowDigester(manifest: manifest)
        return try digester.compute(tableID: tableID, primaryKey: primaryKey, row: row, serverVersion: serverVersion)
    }
}

/// Computes row digests for one manifest, reusing its buffers from row to row: the hot path of
/// pull, rebuild, seed export and seed verification.
///
/// The preimage is built in one writer, in place; the identity and body lengths are patched in
/// after the fact, so no row allocates more than its returned identity and digest.
public struct RowDigester: Sendable {
    /// The manifest that governs every row this digester sees.
    public let manifest: SchemaManifest
    private var writer = OctetWriter(capacity: 512)
    /// For each manifest field (in order), the index of the row member that holds it.
    private var memberForField: [Int] = []
    /// The table of the previous row, and the field position of each of that row's members in
    /// member order: rows from one source repeat their member order, so most member lookups
    /// become one ID comparison instead of a hash lookup.
    private var lastTable: ManifestTable?
    private var lastMemberOrder: [Int] = []

    /// A digester for rows of `manifest`.
    public init(manifest: SchemaManifest) {
        self.manifest = manifest
    }

    /// The row's identity and 32-octet digest.
    public mutating func digest(
        tableID: String, primaryKey: JSONValue, row: JSONValue, serverVersion: String
    ) throws(RowDigestError) -> (identity: RowIdentity, digest: [UInt8]) {
        let table = try self.table(id: tableID)
        let layout = try writePreimage(table: table, primaryKey: primaryKey, row: row, serverVersion: serverVersion)
        let identity = RowIdentity(uncheckedBytes: Array(writer.bytes[layout.identity]))
        return (identity, SHA256.hash(writer.bytes))
    }

    /// The full result, preimage and body included (for tools, vectors and diagnostics).
    public mutating func compute(
        tableID: String, primaryKey: JSONValue, row: JSONValue, serverVersion: String
    ) throws(RowDigestError) -> RowDigest {
        let table = try self.table(id: tableID)
        let layout = try writePreimage(table: table, primaryKey: primaryKey, row: row, serverVersion: serverVersion)
        let preimage = writer.bytes
        return RowDigest(
            identity: RowIdentity(uncheckedBytes: Array(preimage[layout.identity])),
            body: Array(preimage[layout.body]), preimage: preimage, digest: SHA256.hash(preimage))
    }

    private mutating func table(id tableID: String) throws(RowDigestError) -> ManifestTable {
        if let lastTable, lastTable.tableID.exactlyEquals(tableID) { return lastTable }
        guard let table = manifest.table(id: tableID) else { throw .unknownTable(tableID: tableID) }
        lastTable = table
        lastMemberOrder.removeAll(keepingCapacity: true)
        return table
    }

    /// Where the identity and the body sit inside the preimage.
    private struct Layout {
        var identity: Range<Int>
        var body: Range<Int>
    }

    private mutating func writePreimage(
        table: ManifestTable, primaryKey: JSONValue, row: JSONValue, serverVersion: String
    ) throws(RowDigestError) -> Layout {
        writer.removeAll()
        writer.appendDomain(RowDigest.domain)
        writer.append(manifest.schemaHashOctets)

        let identityLengthAt = writer.count
        writer.appendU64BE(0)
        let identityStart = writer.count
        try RowIdentity.append(table: table, primaryKey: primaryKey, into: &writer)
        let identity = identityStart..<writer.count
        let identityKey = (identityStart + table.identityPrefix.count)..<writer.count
        writer.setU64BE(UInt64(identity.count), at: identityLengthAt)

        guard case .object(let object) = row else { throw .rowNotAnObject }
        try matchMembers(of: object, to: table)

        let bodyLengthAt = writer.count
        writer.appendU64BE(0)
        let bodyStart = writer.count
        writer.appendU32BE(UInt32(table.fields.count))
        var rowKey = 0..<0
        for (position, field) in table.fields.enumerated() {
            writer.append(field.textPrefix)
            let valueStart = writer.count
            do throws(PortableValueError) {
                let value = object.members[memberForField[position]].value
                try PortableValue.append(value, spec: field.spec, into: &writer)
            } catch {
                throw .invalidValue(fieldID: field.fieldID, error)
            }
            if position == table.primaryKeyPosition { rowKey = valueStart..<writer.count }
        }
        let body = bodyStart..<writer.count
        writer.setU64BE(UInt64(body.count), at: bodyLengthAt)

        guard writer.bytes[rowKey].elementsEqual(writer.bytes[identityKey]) else { throw .primaryKeyMismatch }
        guard !serverVersion.utf8.isEmpty else { throw .emptyServerVersion }
        writer.appendText(serverVersion)
        return Layout(identity: identity, body: body)
    }

    /// Maps every manifest field to the row member holding it, in one pass over the members.
    private mutating func matchMembers(of object: JSONObject, to table: ManifestTable) throws(RowDigestError) {
        let fields = table.fields
        memberForField.removeAll(keepingCapacity: true)
        memberForField.append(contentsOf: repeatElement(-1, count: fields.count))
        for (index, member) in object.members.enumerated() {
            let position: Int
            if index < lastMemberOrder.count && fields[lastMemberOrder[index]].fieldID.exactlyEquals(member.key) {
                position = lastMemberOrder[index]
            } else {
                guard let found = table.fieldPositions[ExactStringKey(member.key)] else {
                    throw .unknownField(fieldID: member.key)
                }
                position = found
                if index < lastMemberOrder.count {
                    lastMemberOrder[index] = found
                } else {
                    lastMemberOrder.append(found)
                }
            }
            guard memberForField[position] < 0 else { throw .duplicateField(fieldID: member.key) }
            memberForField[position] = index
        }
        if let missing = memberForField.firstIndex(where: { $0 < 0 }) {
            throw .missingField(fieldID: fields[missing].fieldID)
        }
    }
}
