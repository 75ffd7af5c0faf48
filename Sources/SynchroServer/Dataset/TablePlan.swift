import SynchroProtocol

/// How one manifest table is generated: its row count rule and one generator per field, in the
/// manifest's field order (ascending `field_id`), so a generated row lists fields in row-body order.
struct TablePlan: Sendable {
    /// How many rows the table has before any option is applied.
    enum RowCount: Sendable {
        /// A shared table: `rows`, replaced by the server's `--rows` when `overridable`.
        case fixed(rows: Int64, overridable: Bool)
        /// A per-user table: `rows_per_user` rows for each user.
        case perUser(rowsPerUser: Int64)
    }

    let table: ManifestTable
    let rowCount: RowCount
    /// One generator per field of ``table``, in the same order as `table.fields`.
    let generators: [FieldGenerator]
    /// The field IDs of ``table``, in field order (the member names of every generated row).
    let fieldIDs: [String]
    /// Per-field salts of the row stream, so each field's values are independent of the others'.
    let fieldSalts: [UInt64]
    /// Position of the primary key in ``fieldIDs``.
    let keyPosition: Int
    /// The table's own stream: `derive(seed, salt(table_id))`.
    let tableState: UInt64

    init(table: ManifestTable, rowCount: RowCount, generators: [FieldGenerator], seed: UInt64) {
        self.table = table
        self.rowCount = rowCount
        self.generators = generators
        self.fieldIDs = table.fields.map(\.fieldID)
        self.fieldSalts = table.fields.map { SplitMix64.salt($0.fieldID) }
        self.keyPosition = table.fields.firstIndex { $0.fieldID.exactlyEquals(table.primaryKeyFieldID) } ?? 0
        self.tableState = SplitMix64.derive(seed, SplitMix64.salt(table.tableID))
    }

    var tableID: String { table.tableID }

    var isPerUser: Bool {
        if case .perUser = rowCount { return true }
        return false
    }

    /// The generator of the primary-key field.
    var keyGenerator: FieldGenerator { generators[keyPosition] }

    /// The number of rows under the given options (`users` already validated).
    func count(rowsOverride: Int?, users: [String]) -> Int64 {
        switch rowCount {
        case .fixed(let rows, let overridable):
            if overridable, let rowsOverride { return Int64(rowsOverride) }
            return rows
        case .perUser(let rowsPerUser):
            return rowsPerUser * Int64(users.count)
        }
    }

    /// How many distinct row indices the run uses: the whole table for a shared table, one user's
    /// rows for a per-user table (each user's rows are indexed from zero).
    func indexCount(rowsOverride: Int?, users: [String]) -> Int64 {
        switch rowCount {
        case .fixed: count(rowsOverride: rowsOverride, users: users)
        case .perUser(let rowsPerUser): rowsPerUser
        }
    }
}
