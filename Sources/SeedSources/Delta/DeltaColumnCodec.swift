import SQLiteKit
import SynchroProtocol

/// How a delta row's JSON values become SQLite values and back (docs/delta-sources.md, "Seed layout"). Delta APIs
/// are not Synchro: an `int64` arrives as a JSON number (a digit string is accepted too), a `datetime` as an
/// RFC 3339 string in whatever offset the API uses. Values are checked against their column's type and stored in
/// the storage class an app would use (`INTEGER` for int/int64/boolean, `REAL` for float, `TEXT` for the rest, a
/// `json` column as its RFC 8785 text), never repaired. The same mapping read backwards feeds the digest, so the
/// export and `verify` compute it from the stored rows by one function.
enum DeltaColumnCodec {
    /// Why a value does not fit its column (the rule; the value is never part of it).
    enum Failure: Error { case missing, null, type }

    /// The SQLite value for `value` (nil: the member is absent) in `column`.
    static func sqliteValue(
        _ value: JSONValue?, column: DeltaSourceDefinition.Column
    ) throws(Failure) -> SQLiteValue {
        guard let value else {
            guard column.nullable else { throw .missing }
            return .null
        }
        if case .null = value {
            guard column.nullable else { throw .null }
            return .null
        }
        switch column.type {
        case .string, .bytes:
            guard let text = value.stringValue else { throw .type }
            return .text(text)
        case .int:
            guard let int = value.numberValue?.exactInt64, Int32(exactly: int) != nil else { throw .type }
            return .integer(int)
        case .int64:
            if let int = value.numberValue?.exactInt64 { return .integer(int) }
            guard let text = value.stringValue, let int = Int64(text), String(int) == text else { throw .type }
            return .integer(int)
        case .decimal:
            if let number = value.numberValue { return .text(number.literal) }
            guard let text = value.stringValue, JSONNumber(literal: text) != nil else { throw .type }
            return .text(text)
        case .float:
            guard let double = value.numberValue?.doubleValue, double.isFinite else { throw .type }
            return .real(double)
        case .boolean:
            guard let flag = value.boolValue else { throw .type }
            return .integer(flag ? 1 : 0)
        case .datetime, .date, .time:
            guard let text = value.stringValue, Self.isTemporal(text, column.type) else { throw .type }
            return .text(text)
        case .json:
            do {
                return .text(try CanonicalJSON.string(value))
            } catch {
                throw .type
            }
        }
    }

    /// The JSON value a stored SQLite value stands for; nil when the stored value does not fit the column.
    static func jsonValue(_ value: SQLiteValue, column: DeltaSourceDefinition.Column) -> JSONValue? {
        switch (column.type, value) {
        case (_, .null): return column.nullable ? .null : nil
        case (.int, .integer(let int)), (.int64, .integer(let int)): return .number(JSONNumber(int))
        case (.boolean, .integer(let int)): return int == 0 || int == 1 ? .bool(int == 1) : nil
        case (.float, .real(let double)): return JSONNumber(double).map { .number($0) }
        case (.json, .text(let text)): return try? StrictJSONParser().parse(text)
        case (.string, .text(let text)), (.bytes, .text(let text)), (.decimal, .text(let text)),
             (.datetime, .text(let text)), (.date, .text(let text)), (.time, .text(let text)):
            return .string(text)
        default: return nil
        }
    }

    /// Appends the RFC 8785 text of the JSON value the stored value at `index` of `row` stands for: exactly
    /// `CanonicalJSON.encode(jsonValue(row.value(at: index), column:))`, without building the value or a `String`
    /// for the common classes (the digest reads every value of a seed, twice per export). False, with `out` as it
    /// was, when the stored value does not fit the column; text that is not UTF-8 throws as `Statement.text(at:)`.
    static func appendCanonical(
        _ row: Statement, at index: Int, column: DeltaSourceDefinition.Column, to out: inout [UInt8]
    ) throws -> Bool {
        switch (column.type, row.storageClass(at: index)) {
        case (_, .null):
            guard column.nullable else { return false }
            out.append(contentsOf: [0x6E, 0x75, 0x6C, 0x6C])  // null
            return true
        case (.int, .integer), (.int64, .integer):
            let int = row.int64(at: index)
            // Up to 15 digits an integer is exact in binary64 and prints as itself (CanonicalJSON's rule); beyond,
            // the ECMAScript layout of its nearest double.
            guard int.magnitude < 1_000_000_000_000_000 else {
                try CanonicalJSON.appendNumber(JSONNumber(int), to: &out)
                return true
            }
            appendDecimal(int, to: &out)
            return true
        case (.boolean, .integer):
            switch row.int64(at: index) {
            case 0: out.append(contentsOf: [0x66, 0x61, 0x6C, 0x73, 0x65])  // false
            case 1: out.append(contentsOf: [0x74, 0x72, 0x75, 0x65])  // true
            default: return false
            }
            return true
        case (.string, .text), (.bytes, .text), (.decimal, .text), (.datetime, .text), (.date, .text), (.time, .text):
            let appended = try row.withTextBytes(at: index) { bytes throws(CanonicalJSON.Failure) in
                try CanonicalJSON.appendString(utf8: bytes, to: &out)
            }
            if !appended { _ = try row.text(at: index) }  // not UTF-8: the accessor's own refusal
            return appended
        default:
            guard let value = jsonValue(try row.value(at: index), column: column) else { return false }
            try CanonicalJSON.encode(value, into: &out)
            return true
        }
    }

    /// The decimal digits of `int`, as `String(int)` spells them.
    private static func appendDecimal(_ int: Int64, to out: inout [UInt8]) {
        if int < 0 { out.append(0x2D) }
        var magnitude = int.magnitude
        let start = out.count
        repeat {
            out.append(0x30 + UInt8(magnitude % 10))
            magnitude /= 10
        } while magnitude > 0
        out[start...].reverse()
    }

    /// The declared SQL type of a column (its affinity matches the storage class above).
    static func sqlType(_ type: PortableType) -> String {
        switch type {
        case .int, .int64, .boolean: "INTEGER"
        case .float: "REAL"
        default: "TEXT"
        }
    }

    /// RFC 3339 shapes: `date` `YYYY-MM-DD`, `time` `HH:MM:SS[.f]`, `datetime` both joined by `T` with `Z` or
    /// `±HH:MM`.
    static func isTemporal(_ text: String, _ type: PortableType) -> Bool {
        let octets = Array(text.utf8)
        func digits(_ range: Range<Int>) -> Bool {
            range.upperBound <= octets.count && octets[range].allSatisfy { (0x30...0x39).contains($0) }
        }
        func at(_ index: Int, _ character: Character) -> Bool {
            index < octets.count && octets[index] == character.asciiValue
        }
        func isDate(_ start: Int) -> Bool {
            digits(start..<start + 4) && at(start + 4, "-") && digits(start + 5..<start + 7) && at(start + 7, "-")
                && digits(start + 8..<start + 10)
        }
        func timeEnd(_ start: Int) -> Int? {
            guard digits(start..<start + 2), at(start + 2, ":"), digits(start + 3..<start + 5), at(start + 5, ":"),
                  digits(start + 6..<start + 8)
            else { return nil }
            var end = start + 8
            if at(end, ".") {
                end += 1
                let first = end
                while end < octets.count, (0x30...0x39).contains(octets[end]) { end += 1 }
                guard end > first else { return nil }
            }
            return end
        }
        switch type {
        case .date: return octets.count == 10 && isDate(0)
        case .time: return timeEnd(0) == octets.count
        default:
            guard isDate(0), at(10, "T") || at(10, "t"), let end = timeEnd(11) else { return false }
            if end + 1 == octets.count { return at(end, "Z") || at(end, "z") }
            return end + 6 == octets.count && (at(end, "+") || at(end, "-")) && digits(end + 1..<end + 3)
                && at(end + 3, ":") && digits(end + 4..<end + 6)
        }
    }
}
