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
        let sorted = try ScopeEntryOrder(entries)
        var writer = OctetWriter(domain: domain, capacity: 80 + scopeID.utf8.count + sorted.byteCount)
        writer.append(schemaHash)
        writer.appendText(scopeID)
        writer.appendU64BE(UInt64(entries.count))
        sorted.forEachRun { writer.append($0) }
        return ScopeDigest(preimage: writer.bytes, digest: SHA256.hash(writer.bytes))
    }

    /// The 32 digest octets alone: what ``compute(schemaHash:scopeID:entries:)`` returns as `digest`, with the
    /// same checks and errors, but hashed straight from the sorted entries instead of copying them into a preimage
    /// first (a scope of 100,000 rows has a 10 MB preimage). The path of verifiers that only compare digests.
    public static func digest(
        schemaHash: [UInt8], scopeID: String, entries: [(identity: RowIdentity, rowDigest: [UInt8])]
    ) throws(ScopeDigestError) -> [UInt8] {
        try checkHeader(schemaHash: schemaHash, scopeID: scopeID)
        let sorted = try ScopeEntryOrder(entries)
        var header = OctetWriter(domain: domain, capacity: 80 + scopeID.utf8.count)
        header.append(schemaHash)
        header.appendText(scopeID)
        header.appendU64BE(UInt64(entries.count))
        var hasher = SHA256()
        hasher.update(header.bytes)
        sorted.forEachRun { hasher.update(UnsafeRawBufferPointer($0)) }
        return hasher.finalize()
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

/// The entries of a scope digest in the order it hashes them (ascending identity octets), after the per-entry
/// checks of ``ScopeDigest/compute(schemaHash:scopeID:entries:)``: a row digest that is not 32 octets, then a
/// repeated identity (reported at the later of its two entries).
///
/// Each entry's contribution to the preimage, `blob(row_identity) || row_digest`, is written once into one buffer,
/// and (offset, length, entry) keys are sorted by comparing the identities there eight octets at a time: a sort of
/// 100,000 entries makes about 1.7 million comparisons, and the identities of one table share their first 60-odd
/// octets, so comparing them element by element through their arrays dominated the scope digest. Ties (only
/// duplicates) break by entry position, the order of a stable sort. Entries given in identity order (a table scan
/// of integer keys) leave the buffer in preimage order, and it is then hashed as one run.
struct ScopeEntryOrder: ~Copyable {
    private struct Key {
        /// Where the entry's `blob(row_identity)` starts.
        var start: Int
        /// The identity's length in octets.
        var count: Int
        var entry: Int
    }

    private let octets: UnsafeMutablePointer<UInt8>
    private let keys: [Key]
    /// The octets all entries contribute to the preimage.
    let byteCount: Int

    init(_ entries: [(identity: RowIdentity, rowDigest: [UInt8])]) throws(ScopeDigestError) {
        for (i, entry) in entries.enumerated() where entry.rowDigest.count != 32 {
            throw .invalidRowDigest(entry: i)
        }
        let octets = Self.contributions(entries)
        var keys = octets.keys
        let flat = UnsafePointer(octets.base)
        func compare(_ a: Key, _ b: Key) -> Int {
            ByteRun.compare(flat + a.start + 8, count: a.count, flat + b.start + 8, count: b.count)
        }
        keys.sort { a, b in
            let order = compare(a, b)
            return order != 0 ? order < 0 : a.entry < b.entry
        }
        for (previous, current) in zip(keys, keys.dropFirst()) where compare(previous, current) == 0 {
            octets.base.deallocate()
            throw .duplicateIdentity(entry: Swift.max(previous.entry, current.entry))
        }
        self.octets = octets.base
        self.keys = keys
        byteCount = octets.byteCount
    }

    deinit {
        octets.deallocate()
    }

    /// Every entry's `u64be(length) || identity || row_digest`, back to back in entry order.
    private static func contributions(
        _ entries: [(identity: RowIdentity, rowDigest: [UInt8])]
    ) -> (base: UnsafeMutablePointer<UInt8>, keys: [Key], byteCount: Int) {
        let byteCount = entries.reduce(0) { $0 + 8 + $1.identity.bytes.count + 32 }
        let base = UnsafeMutablePointer<UInt8>.allocate(capacity: Swift.max(byteCount, 1))
        var keys: [Key] = []
        keys.reserveCapacity(entries.count)
        var start = 0
        for (i, entry) in entries.enumerated() {
            let count = entry.identity.bytes.count
            UnsafeMutableRawPointer(base + start).storeBytes(of: UInt64(count).bigEndian, as: UInt64.self)
            entry.identity.bytes.withUnsafeBufferPointer { identity in
                if let source = identity.baseAddress { (base + start + 8).initialize(from: source, count: count) }
            }
            entry.rowDigest.withUnsafeBufferPointer { digest in
                (base + start + 8 + count).initialize(from: digest.baseAddress.unsafelyUnwrapped, count: 32)
            }
            keys.append(Key(start: start, count: count, entry: i))
            start += 8 + count + 32
        }
        return (base, keys, byteCount)
    }

    /// Calls `body` with the entries' contributions in identity order, adjacent ones merged into one run.
    func forEachRun(_ body: (UnsafeBufferPointer<UInt8>) -> Void) {
        var runStart = 0
        var runEnd = 0
        for key in keys {
            if key.start != runEnd {
                if runEnd > runStart { body(UnsafeBufferPointer(start: octets + runStart, count: runEnd - runStart)) }
                runStart = key.start
            }
            runEnd = key.start + 8 + key.count + 32
        }
        if runEnd > runStart { body(UnsafeBufferPointer(start: octets + runStart, count: runEnd - runStart)) }
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
    /// The previous row's identity octets (the first `previousCount`); none before the first row.
    private var previous: [UInt8] = []
    private var previousCount = 0
    /// Rows' octets not yet handed to the hasher (the first `pendingCount`): SHA-256 gets them a few kilobytes at a
    /// time, not three small updates per row (each update's own cost was a third of a 100,000-row pass), and they
    /// are copied with `memcpy`, not appended element by element. The hashed octets are the same.
    private var pending: [UInt8] = []
    private var pendingCount = 0
    private static let pendingCapacity = 16_384

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
        let empty = UnsafeBufferPointer<UInt8>(start: nil, count: 0)
        let failure = identity.bytes.withUnsafeBufferPointer { identity in
            rowDigest.withUnsafeBufferPointer { add(head: identity, tail: empty, rowDigest: $0) }
        }
        if let failure { throw failure }
    }

    /// Adds the next row whose identity is the concatenation `identityHead || identityTail` — the octets of a
    /// ``RowIdentity``, which is not built: ``add(identity:rowDigest:)`` for a caller that keeps identities split
    /// (a table's common prefix and each row's rest).
    public mutating func add(
        identityHead: UnsafeBufferPointer<UInt8>, identityTail: UnsafeBufferPointer<UInt8>,
        rowDigest: UnsafeBufferPointer<UInt8>
    ) throws(ScopeDigestError) {
        if let failure = add(head: identityHead, tail: identityTail, rowDigest: rowDigest) { throw failure }
    }

    private mutating func add(
        head: UnsafeBufferPointer<UInt8>, tail: UnsafeBufferPointer<UInt8>, rowDigest: UnsafeBufferPointer<UInt8>
    ) -> ScopeDigestError? {
        let entry = Int(count)
        guard rowDigest.count == 32 else { return .invalidRowDigest(entry: entry) }
        if count > 0 {
            let previousCount = previousCount
            let order = previous.withUnsafeBufferPointer {
                ByteRun.compare(UnsafeBufferPointer(rebasing: $0[..<previousCount]), head, tail)
            }
            if order == 0 { return .duplicateIdentity(entry: entry) }
            guard order < 0 else { return .outOfOrder(entry: entry) }
        }
        guard count < cardinality else { return .cardinalityMismatch(declared: cardinality, actual: count + 1) }
        let length = head.count + tail.count
        if pending.isEmpty { pending = [UInt8](repeating: 0, count: Self.pendingCapacity) }
        if pendingCount + 8 + length + 32 > pending.count { flush() }
        if 8 + length + 32 > pending.count {
            // Longer than the staging buffer (no real identity is): hashed directly.
            withUnsafeBytes(of: UInt64(length).bigEndian) { hasher.update($0) }
            hasher.update(UnsafeRawBufferPointer(head))
            hasher.update(UnsafeRawBufferPointer(tail))
            hasher.update(UnsafeRawBufferPointer(rowDigest))
        } else {
            var at = pendingCount
            pending.withUnsafeMutableBufferPointer { buffer in
                let base = buffer.baseAddress.unsafelyUnwrapped
                UnsafeMutableRawPointer(base + at).storeBytes(of: UInt64(length).bigEndian, as: UInt64.self)
                at += 8
                if let source = head.baseAddress, head.count > 0 { (base + at).update(from: source, count: head.count) }
                at += head.count
                if let source = tail.baseAddress, tail.count > 0 { (base + at).update(from: source, count: tail.count) }
                at += tail.count
                (base + at).update(from: rowDigest.baseAddress.unsafelyUnwrapped, count: 32)
                at += 32
            }
            pendingCount = at
        }
        count += 1
        if previous.count < length { previous = [UInt8](repeating: 0, count: Swift.max(length, 2 * previous.count)) }
        if length > 0 {
            previous.withUnsafeMutableBufferPointer { buffer in
                let base = buffer.baseAddress.unsafelyUnwrapped
                if let source = head.baseAddress, head.count > 0 { base.update(from: source, count: head.count) }
                if let source = tail.baseAddress, tail.count > 0 {
                    (base + head.count).update(from: source, count: tail.count)
                }
            }
        }
        previousCount = length
        return nil
    }

    /// Where one identity lies in a packed run given to ``add(packed:)``: offset and length in octets.
    public struct PackedIdentity: Sendable, Equatable {
        public let offset: Int
        public let count: Int
    }

    /// What ``add(packed:)`` found in a run: its number of rows and its first and last identities (nil when empty).
    public struct PackedRun: Sendable, Equatable {
        public let rows: Int
        public let first: PackedIdentity?
        public let last: PackedIdentity?
    }

    /// Adds the rows of `packed`, their contributions to the preimage back to back exactly as the preimage holds them
    /// (`u64be(length) || identity || row_digest` each), and hashes the run with one update instead of row by row.
    ///
    /// Every check of ``add(identityHead:identityTail:rowDigest:)`` holds for each row: the run is walked first, and
    /// a row whose length runs past the end (its digest would not be 32 octets), an identity that does not sort
    /// strictly after the previous one (in the run or before it) or a row beyond the declared cardinality is refused
    /// before anything is hashed. The walk reads each row's length and compares it with the previous row in place:
    /// no copy per row.
    public mutating func add(packed: UnsafeBufferPointer<UInt8>) throws(ScopeDigestError) -> PackedRun {
        guard let base = packed.baseAddress, packed.count > 0 else { return PackedRun(rows: 0, first: nil, last: nil) }
        let end = packed.count
        var at = 0
        var rows = 0
        var first: PackedIdentity?
        var last: PackedIdentity?
        while at < end {
            let entry = Int(count) + rows
            guard end - at >= 40 else { return try fail(.invalidRowDigest(entry: entry)) }
            let length = UInt64(bigEndian: UnsafeRawPointer(base + at).loadUnaligned(as: UInt64.self))
            guard length <= UInt64(end - at - 40) else { return try fail(.invalidRowDigest(entry: entry)) }
            let identity = PackedIdentity(offset: at + 8, count: Int(length))
            let order: Int
            if let last {
                order = ByteRun.compare(base + last.offset, count: last.count, base + identity.offset, count: identity.count)
            } else if count > 0 {
                let previousCount = previousCount
                let current = UnsafeBufferPointer(start: base + identity.offset, count: identity.count)
                order = previous.withUnsafeBufferPointer {
                    ByteRun.compare(UnsafeBufferPointer(rebasing: $0[..<previousCount]), current)
                }
            } else {
                order = -1
            }
            if order == 0 { return try fail(.duplicateIdentity(entry: entry)) }
            guard order < 0 else { return try fail(.outOfOrder(entry: entry)) }
            guard UInt64(entry) < cardinality else {
                return try fail(.cardinalityMismatch(declared: cardinality, actual: UInt64(entry) + 1))
            }
            if first == nil { first = identity }
            last = identity
            rows += 1
            at = identity.offset + identity.count + 32
        }
        flush()
        hasher.update(UnsafeRawBufferPointer(packed))
        count += UInt64(rows)
        if let last {
            if previous.count < last.count { previous = [UInt8](repeating: 0, count: Swift.max(last.count, 2 * previous.count)) }
            if last.count > 0 {
                previous.withUnsafeMutableBufferPointer { $0.baseAddress.unsafelyUnwrapped.update(from: base + last.offset, count: last.count) }
            }
            previousCount = last.count
        }
        return PackedRun(rows: rows, first: first, last: last)
    }

    private func fail(_ error: ScopeDigestError) throws(ScopeDigestError) -> PackedRun { throw error }

    /// Hands the staged octets to the hasher.
    private mutating func flush() {
        let staged = pendingCount
        pending.withUnsafeBytes { hasher.update(UnsafeRawBufferPointer(rebasing: $0[..<staged])) }
        pendingCount = 0
    }

    /// The 32-octet scope digest; throws when fewer rows than declared were added.
    public consuming func finalize() throws(ScopeDigestError) -> [UInt8] {
        guard count == cardinality else { throw .cardinalityMismatch(declared: cardinality, actual: count) }
        flush()
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
