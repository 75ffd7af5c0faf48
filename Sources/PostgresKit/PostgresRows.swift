import CPQ

/// The rows of one statement's result, in text format: each value is the exact octets PostgreSQL sent (nil for
/// SQL NULL), so JSON results reach the strict parser unchanged.
public struct PostgresRows: Sendable, Equatable {
    /// Column names in result order.
    public let columns: [String]
    /// One array of values per row, each in column order.
    public let rows: [[[UInt8]?]]
    /// The command tag's row count for INSERT, UPDATE, DELETE and friends (`PQcmdTuples`), nil when none.
    public let affectedRows: Int?
    /// Each column's type OID (`PQftype`), in column order: a caller can tell `json` text, sent as the server
    /// built it, from `jsonb` text, which PostgreSQL prints in its own member order.
    public let columnTypes: [UInt32]

    /// The type OIDs of `json` and `jsonb` (`pg_type.h`; fixed since PostgreSQL 9.2 and 9.4).
    public static let jsonType: UInt32 = 114
    public static let jsonbType: UInt32 = 3802

    /// Creates a result (tests build expected values with it).
    public init(columns: [String], rows: [[[UInt8]?]], affectedRows: Int? = nil, columnTypes: [UInt32] = []) {
        self.columns = columns
        self.rows = rows
        self.affectedRows = affectedRows
        self.columnTypes = columnTypes
    }

    /// The value of `column` in row `row` as UTF-8 text, nil for NULL.
    public func text(row: Int, column: Int) -> String? {
        rows[row][column].map { String(decoding: $0, as: UTF8.self) }
    }

    /// The only value of a one-row, one-column result (nil for NULL or no row).
    public var scalar: String? {
        rows.first.flatMap { $0.first ?? nil }.map { String(decoding: $0, as: UTF8.self) }
    }
}

/// One row handed over while a result streams (``PostgresConnection/forEachRow(_:_:_:)``): valid only during the
/// call that receives it.
public struct PostgresRow: ~Copyable {
    let result: OpaquePointer
    let row: Int32

    /// The number of columns.
    public var count: Int { Int(PQnfields(result)) }

    /// Whether `column` is SQL NULL.
    public func isNull(_ column: Int) -> Bool {
        PQgetisnull(result, row, Int32(column)) == 1
    }

    /// The octets of `column`, nil for NULL.
    public func bytes(_ column: Int) -> [UInt8]? {
        PostgresResultReader.value(result, row: row, column: Int32(column))
    }

    /// The value of `column` as UTF-8 text, nil for NULL.
    public func text(_ column: Int) -> String? {
        bytes(column).map { String(decoding: $0, as: UTF8.self) }
    }
}
