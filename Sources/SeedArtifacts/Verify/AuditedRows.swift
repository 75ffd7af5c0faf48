import SynchroStore

/// What ``SeedRowAudit`` keeps of the rows of one synced table, by position in the rowid-ordered scan, for the edge
/// comparison and the scope digests that follow the scan.
///
/// Nothing is kept of a row that passed its checks but one bit (whether an edge names it): its recomputed digest
/// equals its row version's, which the edge pass reads again beside the edges, and its identity is the one its
/// edges' record ID gives, so the scope digests are streamed from SQL in row-identity order (issue #21). Rowids are
/// not kept while they are dense (each the previous plus one, as a seed's writer assigns them); a table whose rowids
/// have gaps keeps them, 8 octets a row. Rows that failed a check are kept in the exception maps below, which a
/// valid seed leaves empty.
final class AuditedRows {
    let table: LocalSchemaTable
    let key: LocalSchemaColumn
    /// Rows appended so far.
    private(set) var count = 0
    /// The first row's rowid; nil before it.
    private(set) var firstRowid: Int64?
    /// Every rowid, ascending, once a gap was seen; nil while the rowids are `firstRowid + position`.
    private var sparseRowids: [Int64]?
    /// One bit per row: an edge of a known scope names it.
    private var edgeBits: [UInt64] = []
    /// The row-version digest of rows whose recomputed digest differs from it or could not be computed; empty when
    /// the row checksum is not a checksum object.
    var versionDigests: [Int: [UInt8]] = [:]
    /// The recomputed digest of rows whose row version carries another one (or no checksum object).
    var differingDigests: [Int: [UInt8]] = [:]
    /// Rows without a row version (reported once; their edges are not compared).
    var withoutVersion: Set<Int> = []
    /// Rows that have no recomputed digest or no identity: a scope naming one has no digest.
    private(set) var undigested: Set<Int> = []
    var versionsMatched = 0

    init(table: LocalSchemaTable, key: LocalSchemaColumn) {
        self.table = table
        self.key = key
    }

    /// The rowid of the last row appended.
    var lastRowid: Int64? {
        guard let firstRowid, count > 0 else { return nil }
        return sparseRowids?.last ?? firstRowid + Int64(count - 1)
    }

    /// Whether any row failed a check whose outcome the scope digests depend on (its digest differs from its
    /// version's or is unknown): then scope digests naming this table take each edge's row from the table.
    var hasDigestExceptions: Bool { !differingDigests.isEmpty || !undigested.isEmpty || !versionDigests.isEmpty }

    /// Appends the next row of the scan; `digested` says whether its digest and identity were computed.
    func append(rowid: Int64, digested: Bool) {
        let position = count
        if let firstRowid {
            if sparseRowids == nil, rowid != firstRowid &+ Int64(position) {
                sparseRowids = (0..<position).map { firstRowid + Int64($0) }
            }
        } else {
            firstRowid = rowid
        }
        sparseRowids?.append(rowid)
        if position % 64 == 0 { edgeBits.append(0) }
        if !digested { undigested.insert(position) }
        count += 1
    }

    /// Appends the rows of `other` — rows of the same table following this one's last, read separately — exactly as
    /// if each had been appended here in turn, with their positions shifted by this one's row count.
    func append(contentsOf other: AuditedRows) {
        let offset = count
        let dense = sparseRowids == nil && other.sparseRowids == nil
            && (firstRowid == nil || other.firstRowid == nil || other.firstRowid == firstRowid! + Int64(count))
        if !dense {
            var rowids = sparseRowids ?? (0..<count).map { firstRowid! + Int64($0) }
            if let otherFirst = other.firstRowid {
                rowids.append(contentsOf: other.sparseRowids ?? (0..<other.count).map { otherFirst + Int64($0) })
            }
            sparseRowids = rowids
        }
        if firstRowid == nil { firstRowid = other.firstRowid }
        count += other.count
        edgeBits = [UInt64](repeating: 0, count: (count + 63) / 64)
        for (position, digest) in other.versionDigests { versionDigests[position + offset] = digest }
        for (position, digest) in other.differingDigests { differingDigests[position + offset] = digest }
        for position in other.withoutVersion { withoutVersion.insert(position + offset) }
        for position in other.undigested { undigested.insert(position + offset) }
        versionsMatched += other.versionsMatched
    }

    /// The position of the row with `rowid`.
    func position(of rowid: Int64) -> Int? {
        guard let first = firstRowid else { return nil }
        guard let rowids = sparseRowids else {
            let (guess, overflow) = rowid.subtractingReportingOverflow(first)
            return !overflow && guess >= 0 && guess < count ? Int(guess) : nil
        }
        var low = 0
        var high = rowids.count
        while low < high {
            let middle = (low + high) / 2
            if rowids[middle] < rowid { low = middle + 1 } else { high = middle }
        }
        return low < rowids.count && rowids[low] == rowid ? low : nil
    }

    /// Records that an edge names the row at `position`.
    func markEdge(_ position: Int) {
        edgeBits[position >> 6] |= 1 << UInt64(position & 63)
    }

    /// The positions of rows no edge names, ascending.
    func positionsWithoutEdge(_ body: (Int) -> Void) {
        for (word, bits) in edgeBits.enumerated() where bits != UInt64.max {
            for bit in 0..<64 where bits & (1 << UInt64(bit)) == 0 {
                let position = word << 6 | bit
                guard position < count else { return }
                body(position)
            }
        }
    }

    /// Whether the row at `position` has both a recomputed digest and an identity (it can enter a scope digest).
    func isDigested(_ position: Int) -> Bool {
        !undigested.contains(position)
    }
}
