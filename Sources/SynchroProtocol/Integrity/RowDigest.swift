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
/// The preimage is built in one buffer, in place; the identity and body lengths are patched in
/// after the fact, so no row allocates more than its returned identity and digest. Values are
/// checked by one-pass recognizers of canonical text and written straight into that buffer (see
/// `PortableValue+FastPath.swift`); only a value they cannot vouch for takes the full check.
public struct RowDigester: Sendable {
    /// The manifest that governs every row this digester sees.
    public let manifest: SchemaManifest
    /// Working memory and per-table plans. Copies of a digester share it until one of them
    /// digests: that one then finds it shared and makes its own (copy-on-write discipline).
    private var state: RowDigestState

    /// A digester for rows of `manifest`.
    public init(manifest: SchemaManifest) {
        self.manifest = manifest
        state = RowDigestState(manifest: manifest)
    }

    /// The row's identity and 32-octet digest.
    public mutating func digest(
        tableID: String, primaryKey: JSONValue, row: JSONValue, serverVersion: String
    ) throws(RowDigestError) -> (identity: RowIdentity, digest: [UInt8]) {
        let state = ownedState()
        let layout = try state.writePreimage(
            tableID: tableID, primaryKey: primaryKey, row: row, serverVersion: serverVersion)
        let identity = RowIdentity(uncheckedBytes: Array(state.preimage(layout.identity)))
        return (identity, SHA256.hash(state.preimage(0..<layout.end)))
    }

    /// The full result, preimage and body included (for tools, vectors and diagnostics).
    public mutating func compute(
        tableID: String, primaryKey: JSONValue, row: JSONValue, serverVersion: String
    ) throws(RowDigestError) -> RowDigest {
        let state = ownedState()
        let layout = try state.writePreimage(
            tableID: tableID, primaryKey: primaryKey, row: row, serverVersion: serverVersion)
        let preimage = Array(state.preimage(0..<layout.end))
        return RowDigest(
            identity: RowIdentity(uncheckedBytes: Array(preimage[layout.identity])),
            body: Array(preimage[layout.body]), preimage: preimage, digest: SHA256.hash(preimage))
    }

    /// The state, after making sure no other digester value shares it.
    private mutating func ownedState() -> RowDigestState {
        if !isKnownUniquelyReferenced(&state) { state = RowDigestState(manifest: manifest) }
        return state
    }
}

/// Where the identity and the body sit inside the preimage, and where it ends.
struct RowDigestLayout {
    var identity: Range<Int>
    var body: Range<Int>
    var end: Int
}

/// The mutable working memory of one ``RowDigester``: the preimage buffer and a plan per table.
///
/// `@unchecked Sendable` because it is mutated without locks: a digester touches it only after
/// `isKnownUniquelyReferenced` showed that no other digester value holds it (the discipline of the
/// standard library's copy-on-write collections), so no two threads ever use one instance.
final class RowDigestState: @unchecked Sendable {
    private let manifest: SchemaManifest
    /// `ROW_DIGEST_DOMAIN || schema_hash_raw`: the constant start of every preimage.
    private let head: [UInt8]
    private var writer = RawOctetWriter(capacity: 1024)
    /// The table of the previous row: rows mostly come table by table.
    private var lastPlan: RowDigestPlan?
    private var plans: [ExactStringKey: RowDigestPlan] = [:]

    init(manifest: SchemaManifest) {
        self.manifest = manifest
        var head = OctetWriter(domain: RowDigest.domain, capacity: 64)
        head.append(manifest.schemaHashOctets)
        self.head = head.bytes
    }

    deinit {
        writer.deallocate()
    }

    /// Octets of the last preimage written (valid until the next row).
    func preimage(_ range: Range<Int>) -> UnsafeBufferPointer<UInt8> {
        writer.octets(in: range)
    }

    /// Validates the row and writes its complete preimage into the buffer.
    ///
    /// Checks, in order: known table, valid key, row is an object, exact field set, valid typed
    /// values in field order, key member encoding identically to `primaryKey`, nonempty version.
    func writePreimage(
        tableID: String, primaryKey: JSONValue, row: JSONValue, serverVersion: String
    ) throws(RowDigestError) -> RowDigestLayout {
        let plan = try self.plan(tableID: tableID)
        // Work on a local copy of the writer (no class-property access per append); growth may
        // move its memory, so it is stored back on every exit.
        var w = writer
        defer { writer = w }
        w.truncate(to: 0)
        w.append(head)

        let identityLengthAt = w.count
        w.appendU64BE(0)
        let identityStart = w.count
        w.append(plan.identityPrefix)
        let identityKeyStart = w.count
        do throws(PortableValueError) {
            try PortableValue.append(primaryKey, spec: plan.primaryKeySpec, into: &w)
        } catch {
            throw .invalidPrimaryKey(error)
        }
        let identity = identityStart..<w.count
        let identityKey = identityKeyStart..<w.count
        w.setU64BE(UInt64(identity.count), at: identityLengthAt)

        guard case .object(let object) = row else { throw .rowNotAnObject }
        let bodyLengthAt = w.count
        w.appendU64BE(0)
        let bodyStart = w.count
        let rowKey = try object.members.withUnsafeBufferPointer { (members) throws(RowDigestError) -> Range<Int> in
            try plan.matchMembers(members)
            return try plan.appendBody(members, into: &w)
        }
        let body = bodyStart..<w.count
        w.setU64BE(UInt64(body.count), at: bodyLengthAt)

        guard ByteRun.equal(w.octets(in: rowKey), w.octets(in: identityKey)) else { throw .primaryKeyMismatch }
        guard !serverVersion.utf8.isEmpty else { throw .emptyServerVersion }
        w.appendText(serverVersion)
        return RowDigestLayout(identity: identity, body: body, end: w.count)
    }

    private func plan(tableID: String) throws(RowDigestError) -> RowDigestPlan {
        if let lastPlan, lastPlan.hasTableID(tableID) { return lastPlan }
        let key = ExactStringKey(tableID)
        if let plan = plans[key] {
            lastPlan = plan
            return plan
        }
        guard let table = manifest.table(id: tableID) else { throw .unknownTable(tableID: tableID) }
        let plan = RowDigestPlan(table: table)
        plans[key] = plan
        lastPlan = plan
        return plan
    }
}

/// One manifest table laid out for the row loop: field specs, `text(field_id)` prefixes and the
/// member-matching scratch in unmanaged memory, so the loop reads them without reference counting
/// or copy-on-write checks.
final class RowDigestPlan {
    private let table: ManifestTable
    private let tableIDOctets: [UInt8]
    /// `ROW_ID_DOMAIN || text(table_id) || text(pk_field_id)`.
    let identityPrefix: [UInt8]
    let primaryKeySpec: FieldSpec
    private let primaryKeyPosition: Int
    private let fieldCount: Int
    /// Field IDs in field order, for error reports only.
    private let fieldIDs: [String]
    private let specs: UnsafeMutablePointer<FieldSpec>
    /// `text(field_id)` of every field.
    private let texts: FieldIDTexts
    /// For each field, the index of the row member holding it (-1 while unmatched).
    private let memberForField: UnsafeMutablePointer<Int>
    /// For each member index below the field count, the field position that member had in the
    /// previous row (-1 if none): rows from one source repeat their member order, so most member
    /// lookups become one octet comparison instead of a hash lookup.
    private let memberOrder: UnsafeMutablePointer<Int>

    init(table: ManifestTable) {
        self.table = table
        tableIDOctets = Array(table.tableID.utf8)
        identityPrefix = table.identityPrefix
        primaryKeySpec = table.primaryKeyField.spec
        primaryKeyPosition = table.primaryKeyPosition
        let fields = table.fields
        fieldCount = fields.count
        fieldIDs = fields.map(\.fieldID)
        specs = .allocate(capacity: fields.count)
        specs.initialize(from: fields.map(\.spec), count: fields.count)
        texts = FieldIDTexts(fields.map(\.textPrefix))
        memberForField = .allocate(capacity: fields.count)
        memberForField.initialize(repeating: -1, count: fields.count)
        memberOrder = .allocate(capacity: fields.count)
        memberOrder.initialize(repeating: -1, count: fields.count)
    }

    deinit {
        specs.deinitialize(count: fieldCount)
        specs.deallocate()
        texts.deallocate()
        memberForField.deallocate()
        memberOrder.deallocate()
    }

    /// Whether `tableID` is this plan's table ID, octet for octet.
    func hasTableID(_ tableID: String) -> Bool {
        tableIDOctets.withUnsafeBufferPointer { mine in
            tableID.utf8.withContiguousStorageIfAvailable { ByteRun.equal(mine, $0) }
                ?? tableID.utf8.elementsEqual(mine)
        }
    }

    /// The octets of `text(field_id)` of the field at `position`.
    @inline(__always)
    private func text(_ position: Int) -> UnsafeBufferPointer<UInt8> {
        texts.text(position)
    }

    /// Whether `key` is the ID of the field at `position` (the ID follows the 8-octet length).
    @inline(__always)
    private func key(_ key: String, isFieldAt position: Int) -> Bool {
        let id = UnsafeBufferPointer(rebasing: text(position).dropFirst(8))
        return key.utf8.withContiguousStorageIfAvailable { ByteRun.equal(id, $0) } ?? false
    }

    /// Maps every field to the row member holding it, in one pass over the members; throws for
    /// the first unknown or repeated member (in member order), then for the first missing field.
    func matchMembers(_ members: UnsafeBufferPointer<JSONMember>) throws(RowDigestError) {
        memberForField.update(repeating: -1, count: fieldCount)
        for index in members.indices {
            let key = members[index].key
            var position = index < fieldCount ? memberOrder[index] : -1
            if position < 0 || !self.key(key, isFieldAt: position) {
                guard let found = table.fieldPositions[ExactStringKey(key)] else {
                    throw .unknownField(fieldID: key)
                }
                position = found
                if index < fieldCount { memberOrder[index] = found }
            }
            guard memberForField[position] < 0 else { throw .duplicateField(fieldID: key) }
            memberForField[position] = index
        }
        for position in 0..<fieldCount where memberForField[position] < 0 {
            throw .missingField(fieldID: fieldIDs[position])
        }
    }

    /// `u32be(field_count) || text(field_id) || typed(value)` for every field in ID order, after
    /// ``matchMembers(_:)``; returns where the key field's typed value was written.
    func appendBody(
        _ members: UnsafeBufferPointer<JSONMember>, into w: inout RawOctetWriter
    ) throws(RowDigestError) -> Range<Int> {
        w.appendU32BE(UInt32(fieldCount))
        var rowKey = 0..<0
        for position in 0..<fieldCount {
            w.append(text(position))
            let valueStart = w.count
            do throws(PortableValueError) {
                try PortableValue.append(members[memberForField[position]].value, spec: specs[position], into: &w)
            } catch {
                throw .invalidValue(fieldID: fieldIDs[position], error)
            }
            if position == primaryKeyPosition { rowKey = valueStart..<w.count }
        }
        return rowKey
    }
}
