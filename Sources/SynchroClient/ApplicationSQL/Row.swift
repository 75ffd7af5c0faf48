import SQLiteKit
import SynchroStore

/// One result row of a local query: column names and typed SQLite values, so NULL, integers, reals, text and
/// blobs stay distinct (the contract's lossless typed rows).
public struct Row: Sendable, Hashable {
    /// The result column names, in order (their `AS` aliases when given).
    public let columns: [String]
    /// The values, in column order.
    public let values: [SQLiteValue]

    /// Creates a row.
    public init(columns: [String], values: [SQLiteValue]) {
        self.columns = columns
        self.values = values
    }

    /// The value of the first column named exactly `name`, or nil when there is none.
    public subscript(_ name: String) -> SQLiteValue? {
        columns.firstIndex(of: name).map { values[$0] }
    }

    /// The value at column `index`.
    public subscript(_ index: Int) -> SQLiteValue {
        values[index]
    }

    /// Binds `arguments`, steps `statement` to the end and collects its rows.
    static func collect(_ statement: Statement, _ arguments: [SQLiteValue]) throws(SQLiteError) -> [Row] {
        try statement.bind(arguments)
        defer { statement.reset() }
        let columns = statement.columnNames
        var rows: [Row] = []
        while try statement.step() {
            rows.append(Row(columns: columns, values: try statement.values()))
        }
        return rows
    }
}
