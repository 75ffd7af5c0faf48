import SQLiteKit
import SynchroStore

/// Where the columns of a row version are in a statement's current row.
struct VersionColumns {
    let statement: Statement
    /// `server_version`, then `row_checksum`; `first` is the version's rowid.
    let first: Int

    var serverVersion: Int { first + 1 }
    var rowChecksum: Int { first + 2 }
}

/// `_synchro_row_versions` read in rowid order alongside a table, for ``SeedRowAudit``: finds each row's version
/// by comparing it with the next version row, and through the primary-key index (as the join it replaces) when
/// that is not the one.
final class VersionCursor {
    private let scan: Statement
    private let search: Statement
    /// Whether `scan` is on a row.
    private var positioned = false
    /// Whether the row `scan` is on was handed out, so the next search starts past it.
    private var consumed = false

    /// The version columns of the row ``find(table:tableOctets:key:at:)`` found.
    var columns: VersionColumns { VersionColumns(statement: scan, first: 0) }

    private init(scan: Statement, search: Statement) {
        self.scan = scan
        self.search = search
    }

    /// A cursor when `_synchro_row_versions` has exactly the baseline's DDL (its primary key is then the unique,
    /// binary-collated index the join searches); nil otherwise, and the audit joins.
    static func baselineShaped(on connection: Connection) throws -> VersionCursor? {
        guard try SeedBaseline.hasBaselineDDL("_synchro_row_versions", on: connection) else { return nil }
        let scan = try connection.prepare("""
            SELECT rowid, server_version, row_checksum, table_name, record_id FROM _synchro_row_versions
            WHERE rowid >= ?1 ORDER BY rowid
            """)
        let search = try connection.prepare(
            "SELECT rowid FROM _synchro_row_versions WHERE table_name = ?1 AND record_id = CAST(?2 AS TEXT)")
        return VersionCursor(scan: scan, search: search)
    }

    /// Positions the cursor on the version of the row whose key is column `column` of `key`'s current row, in
    /// `table` (`tableOctets`: its UTF-8); false when the row has none.
    func find(table: String, tableOctets: [UInt8], key: Statement, at column: Int) throws -> Bool {
        if consumed {
            positioned = try scan.step()
            consumed = false
        }
        if positioned, matches(tableOctets, key: key, at: column) {
            consumed = true
            return true
        }
        // Not the next version row: search the index with the join's condition, and read on from there.
        try search.bind(.text(table), at: 1)
        try search.bind(try key.value(at: column), at: 2)
        defer { search.reset() }
        guard try search.step() else { return false }
        scan.reset()
        try scan.bind(.integer(search.int64(at: 0)), at: 1)
        positioned = try scan.step()
        consumed = positioned
        return positioned
    }

    func finish() {
        scan.reset()
        search.reset()
    }

    /// Whether the scan's row names `table` and the key's text (`CAST(key AS TEXT)` of an integer or text key, octet
    /// for octet); any other key is left to the index search.
    private func matches(_ table: [UInt8], key: Statement, at column: Int) -> Bool {
        guard scan.storageClass(at: 3) == .text, scan.storageClass(at: 4) == .text,
              table.withUnsafeBufferPointer({ table in scan.withTextBytes(at: 3) { OctetRange.equal($0, table) } })
        else { return false }
        switch key.storageClass(at: column) {
        case .integer:
            return scan.withTextBytes(at: 4, SeedRowAudit.canonicalInteger) == key.int64(at: column)
        case .text:
            return key.withTextBytes(at: column) { text in scan.withTextBytes(at: 4) { OctetRange.equal($0, text) } }
        default:
            return false
        }
    }
}
