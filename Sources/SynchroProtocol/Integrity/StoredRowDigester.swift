/// Row digests computed straight from the values a client store keeps in SQLite, without building the wire row.
///
/// A client stores each field in one SQLite storage class (`spec/client-store.md` §5.2): `int`, `int64` and
/// `boolean` as INTEGER, `float` as REAL (or INTEGER), `bytes` as a BLOB, every other type as TEXT holding the wire
/// string. The digest of such a row is the digest of the wire row the client would rebuild from it
/// (`spec/integrity.md` §4.4–§4.5), so a verifier that re-digests every stored row can write each typed value
/// (`tag || 0x01 || payload`) straight from the column: the text octets, the integer, the double's bits, the blob.
///
/// Like the recognizers of `PortableValue+FastPath.swift`, whose one-pass checks it reuses, this path only
/// vouches for values in the form it recognizes: a stored value of another storage class, a value outside its
/// type's canonical form, invalid UTF-8, or a rare valid form (the float `-0.0`) makes
/// ``digest(_:serverVersion:values:)`` return nil, and the caller then converts the row to wire values and digests
/// it with ``RowDigester``, which decides and explains. It never rejects a row on its own.
public struct StoredRowDigester: Sendable {
    /// The manifest that governs every row this digester sees.
    public let manifest: SchemaManifest
    /// The preimage buffer. Copies of a digester share it until one of them digests: that one then finds it
    /// shared and makes its own (copy-on-write discipline, as ``RowDigester`` does).
    private var state: StoredRowDigestState

    /// A digester for rows of `manifest`.
    public init(manifest: SchemaManifest) {
        self.manifest = manifest
        state = StoredRowDigestState(manifest: manifest)
    }

    /// The layout of rows of table `tableID` whose stored values come in `columnFieldIDs` order (column `i` holds
    /// field `columnFieldIDs[i]`), as a table scan returns them. Every field of the table must be named once.
    public func layout(tableID: String, columnFieldIDs: [String]) throws(RowDigestError) -> StoredRowLayout {
        guard let table = manifest.table(id: tableID) else { throw .unknownTable(tableID: tableID) }
        var columns = [Int](repeating: -1, count: table.fields.count)
        for (column, fieldID) in columnFieldIDs.enumerated() {
            guard let position = table.fieldPositions[ExactStringKey(fieldID)] else {
                throw .unknownField(fieldID: fieldID)
            }
            guard columns[position] < 0 else { throw .duplicateField(fieldID: fieldID) }
            columns[position] = column
        }
        if let missing = columns.firstIndex(of: -1) {
            throw .missingField(fieldID: table.fields[missing].fieldID)
        }
        return StoredRowLayout(table: table, columns: columns)
    }

    /// The identity and 32-octet digest of one stored row, or nil when some value is not in a form this path
    /// vouches for (digest the row's wire values with ``RowDigester`` then).
    ///
    /// `values(column, &value)` must store the value of `column` in `value` by calling exactly one of its methods;
    /// it is called for the key column first, then once per field in field-ID order. `serverVersion` is the row
    /// version's UTF-8 text. `layout` must come from a digester of the same manifest.
    public mutating func digest(
        _ layout: StoredRowLayout, serverVersion: UnsafeBufferPointer<UInt8>,
        values: (_ column: Int, _ value: inout StoredValueWriter) -> Void
    ) -> (identity: RowIdentity, digest: [UInt8])? {
        withDigest(layout, serverVersion: serverVersion, values: values) { identity, digest in
            (RowIdentity(uncheckedBytes: Array(identity)), Array(digest))
        }
    }

    /// ``digest(_:serverVersion:values:)`` without allocating: `body` gets the identity's octets and the 32 octets of
    /// the digest, both valid only while it runs. Nil, without calling `body`, where `digest` returns nil.
    public mutating func withDigest<Result>(
        _ layout: StoredRowLayout, serverVersion: UnsafeBufferPointer<UInt8>,
        values: (_ column: Int, _ value: inout StoredValueWriter) -> Void,
        _ body: (_ identity: UnsafeBufferPointer<UInt8>, _ digest: UnsafeBufferPointer<UInt8>) -> Result
    ) -> Result? {
        guard !serverVersion.isEmpty, StoredText.isValidUTF8(serverVersion) else { return nil }
        let state = ownedState()
        let plan = layout.plan
        var value = StoredValueWriter(writer: state.writer, spec: plan.keySpec)
        defer { state.writer = value.writer }
        value.writer.truncate(to: 0)
        state.head.withUnsafeBufferPointer { value.writer.append($0) }

        let identityLengthAt = value.writer.count
        value.writer.appendU64BE(0)
        let identityStart = value.writer.count
        value.writer.append(plan.identityPrefix)
        values(plan.keyColumn, &value)
        guard value.take(), !value.wroteNull else { return nil }
        let identity = identityStart..<value.writer.count
        value.writer.setU64BE(UInt64(identity.count), at: identityLengthAt)

        let bodyLengthAt = value.writer.count
        value.writer.appendU64BE(0)
        let bodyStart = value.writer.count
        value.writer.appendU32BE(UInt32(plan.fieldCount))
        for position in 0..<plan.fieldCount {
            value.writer.append(plan.text(position))
            value.spec = plan.specs[position]
            values(plan.columns[position], &value)
            guard value.take() else { return nil }
        }
        value.writer.setU64BE(UInt64(value.writer.count - bodyStart), at: bodyLengthAt)
        value.writer.appendBlob(serverVersion)
        var digest: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        return withUnsafeMutableBytes(of: &digest) { raw in
            let octets = raw.bindMemory(to: UInt8.self)
            SHA256.hash(value.writer.octets, into: octets.baseAddress.unsafelyUnwrapped)
            return body(value.writer.octets(in: identity), UnsafeBufferPointer(octets))
        }
    }

    private mutating func ownedState() -> StoredRowDigestState {
        if !isKnownUniquelyReferenced(&state) { state = StoredRowDigestState(manifest: manifest) }
        return state
    }
}

/// One table's fields in field-ID order, each with the column that holds it, its spec and its `text(field_id)`.
public struct StoredRowLayout: Sendable {
    let plan: StoredRowPlan

    init(table: ManifestTable, columns: [Int]) {
        plan = StoredRowPlan(table: table, columns: columns)
    }
}

/// The layout in unmanaged memory, so the row loop reads it without reference counting (as ``RowDigestPlan``).
///
/// `@unchecked Sendable`: immutable after `init`; the memory is freed only by `deinit`.
final class StoredRowPlan: @unchecked Sendable {
    let keySpec: FieldSpec
    let keyColumn: Int
    let fieldCount: Int
    /// `ROW_ID_DOMAIN || text(table_id) || text(pk_field_id)`.
    let identityPrefix: UnsafeBufferPointer<UInt8>
    /// Per field position: the column holding it.
    let columns: UnsafeMutablePointer<Int>
    let specs: UnsafeMutablePointer<FieldSpec>
    /// `text(field_id)` of every field.
    private let texts: FieldIDTexts

    init(table: ManifestTable, columns: [Int]) {
        let fields = table.fields
        keySpec = table.primaryKeyField.spec
        keyColumn = columns[table.primaryKeyPosition]
        fieldCount = fields.count
        let prefix = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: table.identityPrefix.count)
        _ = prefix.initialize(from: table.identityPrefix)
        identityPrefix = UnsafeBufferPointer(prefix)
        self.columns = .allocate(capacity: fields.count)
        self.columns.initialize(from: columns, count: fields.count)
        specs = .allocate(capacity: fields.count)
        specs.initialize(from: fields.map(\.spec), count: fields.count)
        texts = FieldIDTexts(fields.map(\.textPrefix))
    }

    deinit {
        UnsafeMutableBufferPointer(mutating: identityPrefix).deallocate()
        columns.deallocate()
        specs.deinitialize(count: fieldCount)
        specs.deallocate()
        texts.deallocate()
    }

    /// The octets of `text(field_id)` of the field at `position`.
    @inline(__always)
    func text(_ position: Int) -> UnsafeBufferPointer<UInt8> {
        texts.text(position)
    }
}

/// Where the caller stores one field's stored value: each method checks the value against the field's spec and,
/// when this path vouches for it, writes its typed encoding into the row's preimage.
public struct StoredValueWriter: ~Copyable {
    var writer: RawOctetWriter
    var spec: FieldSpec
    private var state = State.pending
    /// Whether the value taken last was SQL NULL.
    private(set) var wroteNull = false

    private enum State {
        case pending
        case written
        case declined
    }

    init(writer: RawOctetWriter, spec: FieldSpec) {
        self.writer = writer
        self.spec = spec
    }

    /// Whether exactly one value was written since the last call; readies the writer for the next field.
    mutating func take() -> Bool {
        defer { state = .pending }
        return state == .written
    }

    /// SQL NULL: the JSON `null` of a nullable field.
    public mutating func null() {
        guard begin(), spec.nullable else { return decline() }
        writer.append(spec.type.tag, 0x00)
        wroteNull = true
        state = .written
    }

    /// An INTEGER: an `int` within int32, any `int64`, a `boolean` 0 or 1, or a `float` (its nearest double).
    public mutating func integer(_ value: Int64) {
        guard begin() else { return decline() }
        switch spec.type {
        case .int:
            guard let narrow = Int32(exactly: value) else { return decline() }
            writer.append(spec.type.tag, 0x01)
            writer.appendU32BE(UInt32(bitPattern: narrow))
        case .int64:
            writer.append(spec.type.tag, 0x01)
            writer.appendU64BE(UInt64(bitPattern: value))
        case .boolean:
            guard value == 0 || value == 1 else { return decline() }
            writer.append(spec.type.tag, 0x01)
            writer.append(value == 1 ? 0x01 : 0x00)
        case .float:
            return written(binary64: Double(value))
        default:
            return decline()
        }
        state = .written
    }

    /// A REAL: only a `float`, and only a finite value other than `-0.0`.
    public mutating func real(_ value: Double) {
        guard begin(), spec.type == .float else { return decline() }
        written(binary64: value)
    }

    /// TEXT, as UTF-8 octets: the wire string of a `string`, `decimal`, `datetime`, `date`, `time` or `json`
    /// field, in its canonical form.
    public mutating func text(_ octets: UnsafeBufferPointer<UInt8>) {
        guard begin(), StoredText.isValidUTF8(octets) else { return decline() }
        switch spec.type {
        case .string:
            guard !PortableValue.containsNoncharacter(octets) else { return decline() }
        case .decimal:
            guard let digits = CanonicalDecimal.digitCounts(octets), let precision = spec.precision,
                  let scale = spec.scale, digits.fraction <= scale, digits.integer <= precision - scale,
                  digits.integer + digits.fraction <= precision
            else { return decline() }
        case .datetime:
            guard WireFormats.isTimestamp(octets) else { return decline() }
        case .date:
            guard WireFormats.isDate(octets) else { return decline() }
        case .time:
            guard WireFormats.isTime(octets) else { return decline() }
        case .json:
            guard CanonicalJSONText.isCanonical(octets) else { return decline() }
        case .int, .int64, .float, .boolean, .bytes:
            return decline()
        }
        writer.append(spec.type.tag, 0x01)
        writer.appendBlob(octets)
        state = .written
    }

    /// A BLOB: the octets of a `bytes` field (whose wire form is their base64url text).
    public mutating func blob(_ octets: UnsafeRawBufferPointer) {
        guard begin(), spec.type == .bytes else { return decline() }
        writer.append(spec.type.tag, 0x01)
        writer.appendBlob(octets.assumingMemoryBound(to: UInt8.self))
        state = .written
    }

    /// The wire number of a finite double is its ECMAScript rendering, whose binary64 value is the double itself;
    /// `-0.0` renders as `0`, a form left to the full check.
    private mutating func written(binary64 value: Double) {
        guard value.isFinite, !(value == 0 && value.sign == .minus) else { return decline() }
        writer.append(spec.type.tag, 0x01)
        writer.appendU64BE(value.bitPattern)
        state = .written
    }

    /// Starts a value; false when one was already given for this field.
    private mutating func begin() -> Bool {
        wroteNull = false
        return state == .pending
    }

    private mutating func decline() {
        state = .declined
    }
}

/// The working memory of one ``StoredRowDigester``.
///
/// `@unchecked Sendable` for the reason ``RowDigestState`` is: a digester touches it only after
/// `isKnownUniquelyReferenced` showed that no other digester value holds it.
final class StoredRowDigestState: @unchecked Sendable {
    /// `ROW_DIGEST_DOMAIN || schema_hash_raw`: the constant start of every preimage.
    let head: [UInt8]
    var writer = RawOctetWriter(capacity: 1024)

    init(manifest: SchemaManifest) {
        var head = OctetWriter(domain: RowDigest.domain, capacity: 64)
        head.append(manifest.schemaHashOctets)
        self.head = head.bytes
    }

    deinit {
        writer.deallocate()
    }
}

/// UTF-8 checks of stored text, which (unlike a Swift `String`) is not valid by construction.
enum StoredText {
    /// Whether `octets` is valid UTF-8 (RFC 3629), skipping ASCII eight octets at a time.
    static func isValidUTF8(_ octets: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = octets.baseAddress else { return true }
        let raw = UnsafeRawPointer(base)
        var i = 0
        while i &+ 8 <= octets.count {
            if raw.loadUnaligned(fromByteOffset: i, as: UInt64.self) & 0x8080_8080_8080_8080 != 0 { break }
            i &+= 8
        }
        guard i < octets.count else { return true }
        return UTF8Validation.firstInvalidOffset(UnsafeBufferPointer(start: base + i, count: octets.count - i)) == nil
    }
}
