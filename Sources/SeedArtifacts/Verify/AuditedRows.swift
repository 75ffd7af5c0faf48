import Glibc
import SynchroStore
import SynchroProtocol

/// What ``SeedRowAudit`` keeps of the rows of one synced table, by position in the rowid-ordered scan, for the edge
/// comparison and the scope digests that follow the scan: the rowid, the recomputed digest and the row identity.
///
/// They are kept as fixed-size records in flat arrays — about 60 octets a row for an integer key (rowid 8, digest
/// 32, identity suffix 10, its end 4, flags 1, edge count 4) — rather than a digest array and an identity object per
/// row, which cost about 400 octets a row and made the audit's memory grow with the seed (issue #5). Every identity
/// of a table starts with the same octets (domain, table ID, key field ID), so only what follows them is kept.
final class AuditedRows {
    let table: LocalSchemaTable
    let key: LocalSchemaColumn
    /// Ascending.
    private(set) var rowids: [Int64] = []
    /// Per row, how many edges name it.
    var edgeCounts: [Int32] = []
    /// The row-version digest of rows whose recomputed digest differs from it or could not be computed; empty when
    /// the row checksum is not a checksum object.
    var versionDigests: [Int: [UInt8]] = [:]
    /// Rows without a row version (reported once; their edges are not compared).
    var withoutVersion: Set<Int> = []
    var versionsMatched = 0

    /// The recomputed row digests, 32 octets per row (zeros for a row that could not be digested).
    private var digests: [UInt8] = []
    /// Per row: ``Known``.
    private var known: [Known] = []
    /// The identity octets after ``identityPrefix``, row after row; row `i`'s end at `identityEnds[i]`.
    private var identitySuffixes: [UInt8] = []
    private var identityEnds: [UInt32] = []
    /// The octets every identity of the table starts with, taken from the first identity; nil before it.
    private(set) var identityPrefix: [UInt8]?
    /// Identities that do not start with ``identityPrefix`` (none, from one digester), kept whole so that the scope
    /// digest stays exact whatever the identities.
    private var otherIdentities: [Int: RowIdentity] = [:]

    private struct Known: OptionSet {
        let rawValue: UInt8
        static let digest = Known(rawValue: 1)
        static let identity = Known(rawValue: 2)
        static let otherIdentity = Known(rawValue: 4)
    }

    init(table: LocalSchemaTable, key: LocalSchemaColumn) {
        self.table = table
        self.key = key
    }

    var count: Int { rowids.count }

    /// Reserves room for `rows` rows at once: grown by doubling, the arrays would leave each smaller buffer behind in
    /// the allocator's heap, about as much memory again as they hold.
    func reserve(rows: Int) {
        guard rows > 0 else { return }
        rowids.reserveCapacity(rows)
        edgeCounts.reserveCapacity(rows)
        digests.reserveCapacity(rows * 32)
        known.reserveCapacity(rows)
        identityEnds.reserveCapacity(rows)
    }

    /// Appends the next row of the scan, with its identity and recomputed digest when they are known.
    func append(rowid: Int64, identity: RowIdentity?, digest: [UInt8]?) {
        Self.withBuffer(identity?.bytes) { identity in
            Self.withBuffer(digest) { append(rowid: rowid, identityOctets: identity, digest: $0) }
        }
    }

    /// ``append(rowid:identity:digest:)`` of octets in place: the identity's and the digest's (32 octets).
    func append(
        rowid: Int64, identityOctets identity: UnsafeBufferPointer<UInt8>?, digest: UnsafeBufferPointer<UInt8>?
    ) {
        let position = rowids.count
        rowids.append(rowid)
        edgeCounts.append(0)
        var flags: Known = []
        if let digest, digest.count == 32 {
            digests.append(contentsOf: digest)
            flags.insert(.digest)
        } else {
            digests.append(contentsOf: Self.zeroDigest)
        }
        if let identity {
            if identityPrefix == nil { identityPrefix = Self.prefix(of: Array(identity)) }
            if let prefix = identityPrefix, Self.starts(identity, with: prefix) {
                flags.insert(.identity)
                identitySuffixes.append(contentsOf: UnsafeBufferPointer(rebasing: identity[prefix.count...]))
            } else if let whole = try? RowIdentity(validating: Array(identity)) {
                flags.formUnion([.identity, .otherIdentity])
                otherIdentities[position] = whole
            }
        }
        identityEnds.append(UInt32(identitySuffixes.count))
        known.append(flags)
    }

    private static func starts(_ octets: UnsafeBufferPointer<UInt8>, with prefix: [UInt8]) -> Bool {
        guard octets.count >= prefix.count else { return false }
        return prefix.withUnsafeBufferPointer { prefix in
            OctetRange.equal(UnsafeBufferPointer(rebasing: octets[..<prefix.count]), prefix)
        }
    }

    private static func withBuffer<Result>(
        _ octets: [UInt8]?, _ body: (UnsafeBufferPointer<UInt8>?) -> Result
    ) -> Result {
        guard let octets else { return body(nil) }
        return octets.withUnsafeBufferPointer(body)
    }

    /// Appends the rows of `other` — rows of the same table following this one's last, read separately — exactly as
    /// if each had been appended here in turn, with their positions shifted by this one's row count.
    func append(contentsOf other: AuditedRows) {
        let offset = rowids.count
        if identityPrefix == nil, otherIdentities.isEmpty, !known.contains(where: { $0.contains(.identity) }) {
            identityPrefix = other.identityPrefix
        }
        if other.identityPrefix == nil || other.identityPrefix == identityPrefix {
            let suffixBase = UInt32(identitySuffixes.count)
            rowids.append(contentsOf: other.rowids)
            edgeCounts.append(contentsOf: other.edgeCounts)
            digests.append(contentsOf: other.digests)
            known.append(contentsOf: other.known)
            identitySuffixes.append(contentsOf: other.identitySuffixes)
            identityEnds.append(contentsOf: other.identityEnds.lazy.map { $0 + suffixBase })
            for (position, identity) in other.otherIdentities { otherIdentities[position + offset] = identity }
        } else {
            // Another prefix than this one's: each identity is split as this one would have split it.
            for position in other.rowids.indices {
                append(rowid: other.rowids[position], identity: other.identity(at: position),
                       digest: other.digest(at: position))
                edgeCounts[offset + position] = other.edgeCounts[position]
            }
        }
        for (position, digest) in other.versionDigests { versionDigests[position + offset] = digest }
        for position in other.withoutVersion { withoutVersion.insert(position + offset) }
        versionsMatched += other.versionsMatched
    }

    /// The position of the row with `rowid` (rowids of seeded integer keys are usually dense).
    func position(of rowid: Int64) -> Int? {
        guard let first = rowids.first else { return nil }
        let guess = rowid &- first
        if guess >= 0, guess < rowids.count, rowids[Int(guess)] == rowid { return Int(guess) }
        var low = 0
        var high = rowids.count
        while low < high {
            let middle = (low + high) / 2
            if rowids[middle] < rowid { low = middle + 1 } else { high = middle }
        }
        return low < rowids.count && rowids[low] == rowid ? low : nil
    }

    /// Whether the row at `position` has both a recomputed digest and an identity (it can enter a scope digest).
    func isDigested(_ position: Int) -> Bool {
        known[position].isSuperset(of: [.digest, .identity])
    }

    /// The recomputed digest of the row at `position`; nil when it could not be digested.
    func digest(at position: Int) -> [UInt8]? {
        guard known[position].contains(.digest) else { return nil }
        return Array(digests[(position * 32)..<(position * 32 + 32)])
    }

    /// Calls `body` with the digest an edge of the row at `position` must carry: the row version's when it differs
    /// from the recomputed one, else the recomputed one; empty when neither is known.
    func withExpectedDigest<Result>(at position: Int, _ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
        if let version = versionDigests[position] { return version.withUnsafeBufferPointer(body) }
        guard known[position].contains(.digest) else { return body(UnsafeBufferPointer(start: nil, count: 0)) }
        return digests.withUnsafeBufferPointer { all in
            body(UnsafeBufferPointer(rebasing: all[(position * 32)..<(position + 1) * 32]))
        }
    }

    /// The identity of the row at `position`; nil when it has none.
    func identity(at position: Int) -> RowIdentity? {
        let flags = known[position]
        guard flags.contains(.identity) else { return nil }
        if flags.contains(.otherIdentity) { return otherIdentities[position] }
        guard let prefix = identityPrefix else { return nil }
        return try? RowIdentity(validating: prefix + identitySuffixes[suffixRange(position)])
    }

    /// Whether the identity of the row at `position` sorts before that of the row at `other` of `otherRows`
    /// (unsigned octet order, the order of a scope digest); both must have an identity.
    func identityPrecedes(_ position: Int, _ otherRows: AuditedRows, _ other: Int) -> Bool {
        withIdentityParts(position) { prefix, suffix in
            otherRows.withIdentityParts(other) { otherPrefix, otherSuffix in
                if self === otherRows, !known[position].contains(.otherIdentity),
                   !known[other].contains(.otherIdentity)
                {
                    return Self.precedes(suffix, otherSuffix)
                }
                return Self.precedes(prefix, suffix, otherPrefix, otherSuffix)
            }
        }
    }

    /// Adds the row at `position` to `accumulator` — its identity as the table's prefix and the row's suffix, and its
    /// recomputed digest, neither copied out; false when the row has no identity or digest or the accumulator refuses
    /// it (out of order, a repeated identity, more rows than declared).
    func feed(_ position: Int, into accumulator: inout ScopeDigestAccumulator) -> Bool {
        guard isDigested(position) else { return false }
        return withIdentityParts(position) { head, tail in
            digests.withUnsafeBufferPointer { all in
                let digest = UnsafeBufferPointer(rebasing: all[(position * 32)..<(position + 1) * 32])
                do {
                    try accumulator.add(identityHead: head, identityTail: tail, rowDigest: digest)
                    return true
                } catch {
                    return false
                }
            }
        }
    }

    /// Whether every identity of the table starts with ``identityPrefix`` (then identity order within the table is
    /// the order of the suffixes).
    var allIdentitiesSharePrefix: Bool { otherIdentities.isEmpty && identityPrefix != nil }

    /// Sorts `positions` — rows with an identity, all starting with ``identityPrefix`` — into identity order, by
    /// their suffixes.
    func sortByIdentity(_ positions: inout [UInt32]) {
        identitySuffixes.withUnsafeBufferPointer { suffixes in
            identityEnds.withUnsafeBufferPointer { ends in
                func suffix(_ position: UInt32) -> UnsafeBufferPointer<UInt8> {
                    let index = Int(position)
                    let start = index == 0 ? 0 : Int(ends[index - 1])
                    return UnsafeBufferPointer(rebasing: suffixes[start..<Int(ends[index])])
                }
                // Edges are usually stored in identity order already.
                let sorted = zip(positions, positions.dropFirst()).allSatisfy {
                    !Self.precedes(suffix($0.1), suffix($0.0))
                }
                guard !sorted else { return }
                positions.sort { Self.precedes(suffix($0), suffix($1)) }
            }
        }
    }

    /// Calls `body` with the two parts whose concatenation is the identity of the row at `position`.
    private func withIdentityParts<Result>(
        _ position: Int, _ body: (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) -> Result
    ) -> Result {
        let empty = UnsafeBufferPointer<UInt8>(start: nil, count: 0)
        if known[position].contains(.otherIdentity), let identity = otherIdentities[position] {
            return identity.bytes.withUnsafeBufferPointer { body(empty, $0) }
        }
        let prefix = identityPrefix ?? []
        return prefix.withUnsafeBufferPointer { prefix in
            identitySuffixes.withUnsafeBufferPointer { suffixes in
                body(prefix, UnsafeBufferPointer(rebasing: suffixes[suffixRange(position)]))
            }
        }
    }

    private func suffixRange(_ position: Int) -> Range<Int> {
        (position == 0 ? 0 : Int(identityEnds[position - 1]))..<Int(identityEnds[position])
    }

    private static let zeroDigest = [UInt8](repeating: 0, count: 32)

    /// The octets of a row identity up to its key tag: the domain with its zero octet, `text(table_id)` and
    /// `text(pk_field_id)` (`spec/integrity.md` §4.3); the whole identity if it is shorter than that.
    private static func prefix(of identity: [UInt8]) -> [UInt8] {
        var end = RowIdentity.domain.utf8.count + 1
        for _ in 0..<2 {
            guard end + 8 <= identity.count else { return identity }
            var length = 0
            for index in end..<(end + 8) {
                guard length < Int.max >> 8 else { return identity }
                length = length << 8 | Int(identity[index])
            }
            guard length <= identity.count - end - 8 else { return identity }
            end += 8 + length
        }
        return Array(identity[..<end])
    }

    /// Unsigned octet order of two buffers.
    private static func precedes(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
        let common = min(a.count, b.count)
        if common > 0, let x = a.baseAddress, let y = b.baseAddress {
            let order = memcmp(x, y, common)
            if order != 0 { return order < 0 }
        }
        return a.count < b.count
    }

    /// Unsigned octet order of the concatenations `a1 a2` and `b1 b2`.
    private static func precedes(
        _ a1: UnsafeBufferPointer<UInt8>, _ a2: UnsafeBufferPointer<UInt8>,
        _ b1: UnsafeBufferPointer<UInt8>, _ b2: UnsafeBufferPointer<UInt8>
    ) -> Bool {
        let a = a1.count + a2.count
        let b = b1.count + b2.count
        for index in 0..<min(a, b) {
            let x = index < a1.count ? a1[index] : a2[index - a1.count]
            let y = index < b1.count ? b1[index] : b2[index - b1.count]
            if x != y { return x < y }
        }
        return a < b
    }
}
