/// Validation and binary encoding of wire values by their manifest type (`spec/integrity.md` §1
/// and §4.1): `typed(v) = tag || 0x00` for SQL null, `tag || 0x01 || payload(v)` otherwise.
///
/// Values are validated, never repaired: a value not already in its canonical wire form throws.
public enum PortableValue {
    /// The typed octets of `value` for a field described by `spec`.
    public static func typedBytes(_ value: JSONValue, spec: FieldSpec) throws(PortableValueError) -> [UInt8] {
        var writer = OctetWriter(capacity: 32)
        try append(value, spec: spec, into: &writer)
        return writer.bytes
    }

    /// Appends the typed octets of `value` to `writer`; nothing is written when validation fails.
    public static func append(
        _ value: JSONValue, spec: FieldSpec, into writer: inout OctetWriter
    ) throws(PortableValueError) {
        // One encoder for every caller: the row digest's, which writes into unmanaged memory.
        var raw = RawOctetWriter(capacity: 64)
        defer { raw.deallocate() }
        try append(value, spec: spec, into: &raw)
        writer.append(raw.octets)
    }

    /// Checks `value` against `spec` without encoding it.
    public static func validate(_ value: JSONValue, spec: FieldSpec) throws(PortableValueError) {
        _ = try validatedPayload(value, spec: spec)
    }

    /// What follows the presence octet; strings stay strings so no octet copy is made before writing.
    enum Payload {
        /// `blob(UTF-8(text))`: strings, decimals, temporal values and canonical JSON text.
        case text(String)
        /// `blob(octets)`: decoded `bytes` values.
        case octets([UInt8])
        case int32(Int32)
        case int64(Int64)
        /// IEEE 754 binary64 bit pattern, written big-endian.
        case binary64(UInt64)
        case boolean(Bool)
    }

    /// The payload of a valid non-null value, nil for a permitted null; throws for anything else.
    static func validatedPayload(_ value: JSONValue, spec: FieldSpec) throws(PortableValueError) -> Payload? {
        if case .null = value {
            guard spec.nullable else { throw .nullNotAllowed }
            return nil
        }
        switch spec.type {
        case .string:
            let text = try string(value, for: .string)
            guard !containsNoncharacter(text) else { throw .stringNoncharacter }
            return .text(text)
        case .int:
            guard case .number(let number) = value else { throw mismatch(.int, value) }
            return .int32(try int32(number))
        case .int64:
            return .int64(try int64(try string(value, for: .int64)))
        case .decimal:
            let text = try string(value, for: .decimal)
            try checkDecimal(text, precision: spec.precision ?? 0, scale: spec.scale ?? 0)
            return .text(text)
        case .float:
            guard case .number(let number) = value else { throw mismatch(.float, value) }
            return .binary64(try binary64(number))
        case .boolean:
            guard case .bool(let flag) = value else { throw mismatch(.boolean, value) }
            return .boolean(flag)
        case .datetime:
            let text = try string(value, for: .datetime)
            guard WireFormats.isTimestamp(text) else { throw .datetimeInvalid }
            return .text(text)
        case .date:
            let text = try string(value, for: .date)
            guard WireFormats.isDate(text) else { throw .dateInvalid }
            return .text(text)
        case .time:
            let text = try string(value, for: .time)
            guard WireFormats.isTime(text) else { throw .timeInvalid }
            return .text(text)
        case .json:
            let text = try string(value, for: .json)
            try checkJSONDocument(text)
            // The content is byte-identical to its RFC 8785 form, so it is the payload as is.
            return .text(text)
        case .bytes:
            let text = try string(value, for: .bytes)
            guard let octets = Base64URL.decode(text) else { throw .bytesNotCanonical }
            return .octets(octets)
        }
    }

    @inline(__always)
    private static func string(_ value: JSONValue, for type: PortableType) throws(PortableValueError) -> String {
        guard case .string(let text) = value else { throw mismatch(type, value) }
        return text
    }

    private static func mismatch(_ type: PortableType, _ value: JSONValue) -> PortableValueError {
        .typeMismatch(expected: type, found: value.typeName)
    }

    // MARK: - Integers

    private static func int32(_ number: JSONNumber) throws(PortableValueError) -> Int32 {
        switch CanonicalInteger.parse(number.literal) {
        case .notCanonical: throw .intNotCanonical
        case .outOfRange: throw .intOutOfRange
        case .value(let v):
            guard let narrow = Int32(exactly: v) else { throw .intOutOfRange }
            return narrow
        }
    }

    private static func int64(_ text: String) throws(PortableValueError) -> Int64 {
        switch CanonicalInteger.parse(text) {
        case .notCanonical: throw .int64NotCanonical
        case .outOfRange: throw .int64OutOfRange
        case .value(let v): return v
        }
    }

    // MARK: - Decimal

    private static func checkDecimal(_ text: String, precision: Int, scale: Int) throws(PortableValueError) {
        guard let digits = CanonicalDecimal.digitCounts(text) else { throw .decimalNotCanonical }
        guard digits.fraction <= scale else { throw .decimalScaleExceeded }
        guard digits.integer <= precision - scale, digits.integer + digits.fraction <= precision else {
            throw .decimalPrecisionExceeded
        }
    }

    // MARK: - Float

    private static func binary64(_ number: JSONNumber) throws(PortableValueError) -> UInt64 {
        let literal = number.literal
        if isShortInteger(literal) {
            // Up to 15 digits is exact in binary64 and is its own ECMAScript rendering.
            guard let value = Double(literal) else { throw .floatNotCanonical }
            return value.bitPattern
        }
        guard let value = number.doubleValue else { throw .floatNotFinite }
        if value == 0 && value.sign == .minus { throw .floatNegativeZero }
        guard ECMAScriptNumber.format(value).exactlyEquals(literal) else { throw .floatNotCanonical }
        return value.bitPattern
    }

    /// `0` or `-?[1-9][0-9]{0,14}`: an integer literal that needs no formatting check.
    private static func isShortInteger(_ literal: String) -> Bool {
        let utf8 = literal.utf8
        guard let first = utf8.first, utf8.count <= 16 else { return false }
        let digits = first == UInt8(ascii: "-") ? utf8.dropFirst() : utf8[...]
        guard let lead = digits.first, digits.count <= 15 else { return false }
        if lead == UInt8(ascii: "0") { return digits.count == 1 && first != UInt8(ascii: "-") }
        return digits.allSatisfy { $0 &- UInt8(ascii: "0") < 10 }
    }

    // MARK: - JSON documents

    private static func checkJSONDocument(_ text: String) throws(PortableValueError) {
        let document: JSONValue
        do throws(JSONParseError) {
            document = try StrictJSONParser().parse(text)
        } catch {
            throw error.rule == .duplicateMember ? .jsonDuplicateMember : .jsonMalformed
        }
        try checkNumbers(document)
        let canonical: [UInt8]
        do throws(CanonicalJSON.Failure) {
            canonical = try CanonicalJSON.encode(document)
        } catch {
            switch error {
            case .noncharacter: throw .jsonNoncharacter
            case .nonFiniteNumber: throw .jsonNonFiniteNumber
            }
        }
        guard canonical.elementsEqual(text.utf8) else { throw .jsonNotCanonical }
    }

    /// I-JSON numbers: finite in binary64, and integer-valued ones within ±(2^53−1).
    private static func checkNumbers(_ value: JSONValue) throws(PortableValueError) {
        switch value {
        case .number(let number):
            guard let d = number.doubleValue else { throw .jsonNonFiniteNumber }
            if d.rounded(.towardZero) == d && d.magnitude > 9_007_199_254_740_991 { throw .jsonUnsafeInteger }
        case .array(let elements):
            for element in elements { try checkNumbers(element) }
        case .object(let object):
            for member in object.members { try checkNumbers(member.value) }
        case .null, .bool, .string:
            break
        }
    }

    // MARK: - Strings

    /// Noncharacter scan over UTF-8: only lead octets ≥ 0xEF can start one, so most text is skipped.
    static func containsNoncharacter(_ text: String) -> Bool {
        let scanned = text.utf8.withContiguousStorageIfAvailable { containsNoncharacter($0) }
        return scanned ?? Unicode.containsNoncharacter(text)
    }

    /// ``containsNoncharacter(_:)-(String)`` over valid UTF-8 octets; words of ASCII are skipped
    /// eight octets at a time.
    static func containsNoncharacter(_ buffer: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = buffer.baseAddress else { return false }
        let raw = UnsafeRawPointer(base)
        let count = buffer.count
        var i = 0
        while i &+ 8 <= count {
            if raw.loadUnaligned(fromByteOffset: i, as: UInt64.self) & 0x8080_8080_8080_8080 != 0 { break }
            i &+= 8
        }
        while i < count {
            if buffer[i] >= 0xEF && isNoncharacter(buffer, at: i) { return true }
            i &+= 1
        }
        return false
    }

    /// U+FDD0–U+FDEF (`EF B7 90`–`EF B7 AF`) or a code point ending in FFFE/FFFF, in valid UTF-8.
    @inline(__always)
    static func isNoncharacter(_ b: UnsafeBufferPointer<UInt8>, at i: Int) -> Bool {
        if b[i] == 0xEF {
            guard i + 2 < b.count else { return false }
            if b[i + 1] == 0xB7 { return (0x90...0xAF).contains(b[i + 2]) }
            return b[i + 1] == 0xBF && b[i + 2] >= 0xBE
        }
        guard i + 3 < b.count else { return false }
        return b[i + 1] & 0x0F == 0x0F && b[i + 2] == 0xBF && b[i + 3] >= 0xBE
    }
}

/// The canonical integer text `0|-?[1-9][0-9]*` shared by `int` literals and `int64` strings.
enum CanonicalInteger {
    enum Parsed: Equatable {
        case value(Int64)
        case outOfRange
        case notCanonical
    }

    /// Grammar first, range second, so `"0123456789012345678901"` is a syntax error.
    static func parse(_ text: String) -> Parsed {
        if let parsed = text.utf8.withContiguousStorageIfAvailable({ parse($0) }) { return parsed }
        return Array(text.utf8).withUnsafeBufferPointer { parse($0) }
    }

    /// ``parse(_:)-(String)`` over the octets of the text.
    static func parse(_ u: UnsafeBufferPointer<UInt8>) -> Parsed {
        let n = u.count
        guard n > 0 else { return .notCanonical }
        let negative = u[0] == UInt8(ascii: "-")
        var i = negative ? 1 : 0
        guard i < n else { return .notCanonical }
        let c = u[i]
        if c == UInt8(ascii: "0") {
            return n == i + 1 && !negative ? .value(0) : .notCanonical
        }
        guard c &- UInt8(ascii: "1") < 9 else { return .notCanonical }
        var magnitude = UInt64(c &- UInt8(ascii: "0"))
        i += 1
        if n - i < 18 {
            // At most 18 digits cannot overflow UInt64 (or even Int64): no overflow checks needed.
            while i < n {
                let digit = u[i] &- UInt8(ascii: "0")
                guard digit < 10 else { return .notCanonical }
                magnitude = magnitude &* 10 &+ UInt64(digit)
                i &+= 1
            }
        } else {
            var overflow = false
            while i < n {
                let digit = u[i] &- UInt8(ascii: "0")
                guard digit < 10 else { return .notCanonical }
                i &+= 1
                guard !overflow else { continue }
                let (shifted, o1) = magnitude.multipliedReportingOverflow(by: 10)
                let (sum, o2) = shifted.addingReportingOverflow(UInt64(digit))
                overflow = o1 || o2
                magnitude = sum
            }
            if overflow { return .outOfRange }
        }
        if negative {
            guard magnitude <= UInt64(Int64.max) + 1 else { return .outOfRange }
            return .value(Int64(bitPattern: 0 &- magnitude))
        }
        guard magnitude <= UInt64(Int64.max) else { return .outOfRange }
        return .value(Int64(magnitude))
    }
}

/// The canonical decimal grammar `0|-?([1-9][0-9]*(\.[0-9]*[1-9])?|0\.[0-9]*[1-9])`.
enum CanonicalDecimal {
    /// Integer digits (0 for `0.x`) and fraction digits of a canonical decimal, nil otherwise.
    static func digitCounts(_ text: String) -> (integer: Int, fraction: Int)? {
        if let counts = text.utf8.withContiguousStorageIfAvailable({ digitCounts($0) }) { return counts }
        return Array(text.utf8).withUnsafeBufferPointer { digitCounts($0) }
    }

    /// ``digitCounts(_:)-(String)`` over the octets of the text.
    static func digitCounts(_ u: UnsafeBufferPointer<UInt8>) -> (integer: Int, fraction: Int)? {
        let n = u.count
        guard n > 0 else { return nil }
        let negative = u[0] == UInt8(ascii: "-")
        var i = negative ? 1 : 0
        guard i < n else { return nil }
        let c = u[i]
        i += 1
        var integerDigits = 0
        if c == UInt8(ascii: "0") {
            guard i < n else { return negative ? nil : (0, 0) }
            guard u[i] == UInt8(ascii: ".") else { return nil }
        } else {
            guard c &- UInt8(ascii: "1") < 9 else { return nil }
            integerDigits = 1
            while i < n && u[i] &- UInt8(ascii: "0") < 10 {
                integerDigits += 1
                i += 1
            }
            guard i < n else { return (integerDigits, 0) }
            guard u[i] == UInt8(ascii: ".") else { return nil }
        }
        // The digits after the point: at least one, the last one nonzero.
        i += 1
        let fractionStart = i
        while i < n {
            guard u[i] &- UInt8(ascii: "0") < 10 else { return nil }
            i += 1
        }
        guard n > fractionStart && u[n - 1] != UInt8(ascii: "0") else { return nil }
        return (integerDigits, n - fractionStart)
    }
}
