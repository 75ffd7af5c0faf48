/// Which rows of a table a scan reads, by rowid.
enum RowidRange {
    case all
    /// Rowids up to and including the bound.
    case through(Int64)
    /// Rowids above the bound.
    case after(Int64)

    var whereClause: String {
        switch self {
        case .all: ""
        case .through: "WHERE t.rowid <= ?1"
        case .after: "WHERE t.rowid > ?1"
        }
    }

    var bound: Int64? {
        switch self {
        case .all: nil
        case .through(let bound), .after(let bound): bound
        }
    }
}
