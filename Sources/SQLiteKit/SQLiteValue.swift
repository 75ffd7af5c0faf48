/// One SQLite value in one of the five storage classes, as bound to parameters and read from columns.
///
/// Equality follows SQLite's BINARY comparison rather than Swift's `String` equality: two texts are equal only
/// when their UTF-8 bytes are, so NFC and NFD spellings of the same characters stay distinct, as they are in
/// the database. Reals compare as `Double` does (`-0.0 == 0.0`, NaN is unequal to itself). SQLite itself stores
/// a bound NaN as NULL, and a `REAL` column stores `-0.0` as `0.0` (an untyped column keeps the sign).
///
/// There is deliberately no `nil` literal for `.null`: `value == nil` on an optional result must keep meaning
/// "no value", not "SQL NULL".
public enum SQLiteValue: Sendable {
    /// SQL NULL.
    case null
    /// A 64-bit signed integer.
    case integer(Int64)
    /// An IEEE 754 double.
    case real(Double)
    /// UTF-8 text, bound and read back byte for byte.
    case text(String)
    /// Bytes, possibly empty and possibly containing zeros.
    case blob([UInt8])
}

extension SQLiteValue {
    /// Whether the value is SQL NULL.
    public var isNull: Bool {
        if case .null = self { true } else { false }
    }

    /// The integer, when the value is one (no conversion from other storage classes).
    public var integerValue: Int64? {
        if case .integer(let value) = self { value } else { nil }
    }

    /// The double, when the value is a real (no conversion from other storage classes).
    public var realValue: Double? {
        if case .real(let value) = self { value } else { nil }
    }

    /// The text, when the value is text (no conversion from other storage classes).
    public var textValue: String? {
        if case .text(let value) = self { value } else { nil }
    }

    /// The bytes, when the value is a blob (no conversion from other storage classes).
    public var blobValue: [UInt8]? {
        if case .blob(let value) = self { value } else { nil }
    }
}

extension SQLiteValue: Hashable {
    /// Compares like SQLite's BINARY collation: texts by UTF-8 bytes, not by Unicode canonical equivalence.
    public static func == (lhs: SQLiteValue, rhs: SQLiteValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case let (.integer(left), .integer(right)): left == right
        case let (.real(left), .real(right)): left == right
        case let (.text(left), .text(right)): left.utf8.elementsEqual(right.utf8)
        case let (.blob(left), .blob(right)): left == right
        default: false
        }
    }

    /// Hashes consistently with `==`: texts by their UTF-8 bytes.
    public func hash(into hasher: inout Hasher) {
        switch self {
        case .null:
            hasher.combine(0 as UInt8)
        case .integer(let value):
            hasher.combine(1 as UInt8)
            hasher.combine(value)
        case .real(let value):
            hasher.combine(2 as UInt8)
            hasher.combine(value)
        case .text(let value):
            hasher.combine(3 as UInt8)
            hasher.combine(value.utf8.count)
            for byte in value.utf8 {
                hasher.combine(byte)
            }
        case .blob(let value):
            hasher.combine(4 as UInt8)
            hasher.combine(value)
        }
    }
}

extension SQLiteValue: ExpressibleByIntegerLiteral {
    /// An integer literal is an `.integer`.
    public init(integerLiteral value: Int64) {
        self = .integer(value)
    }
}

extension SQLiteValue: ExpressibleByFloatLiteral {
    /// A float literal is a `.real`.
    public init(floatLiteral value: Double) {
        self = .real(value)
    }
}

extension SQLiteValue: ExpressibleByStringLiteral {
    /// A string literal is a `.text`.
    public init(stringLiteral value: String) {
        self = .text(value)
    }
}

extension SQLiteValue: ExpressibleByBooleanLiteral {
    /// SQLite has no boolean storage class: `true` is the integer 1 and `false` the integer 0.
    public init(booleanLiteral value: Bool) {
        self = .integer(value ? 1 : 0)
    }
}
