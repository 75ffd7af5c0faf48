/// The RFC 8785 JSON Canonicalization Scheme as Synchro uses it (`spec/integrity.md` §2).
///
/// Members are ordered by UTF-16 code units, numbers take the ECMAScript layout of their nearest
/// binary64 value, strings use the JCS escapes. Input must be I-JSON: a number outside finite
/// binary64 or a Unicode noncharacter in a string or member name is refused.
public enum CanonicalJSON {
    /// Why a value has no canonical form.
    public enum Failure: Error, Sendable, Equatable, CustomStringConvertible {
        /// A number that is not finite in binary64 (`1e400`).
        case nonFiniteNumber
        /// A Unicode noncharacter (U+FDD0–U+FDEF, U+xxFFFE, U+xxFFFF), which I-JSON forbids.
        case noncharacter

        /// The rule that was broken, never the value that broke it.
        public var description: String {
            switch self {
            case .nonFiniteNumber: "not I-JSON: a number is outside finite binary64"
            case .noncharacter: "not I-JSON: a string contains a Unicode noncharacter"
            }
        }
    }

    /// The canonical UTF-8 octets of `value`.
    public static func encode(_ value: JSONValue) throws(Failure) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        try encode(value, into: &out)
        return out
    }

    /// The canonical text of `value` (convenience for tests and diagnostics).
    public static func string(_ value: JSONValue) throws(Failure) -> String {
        String(decoding: try encode(value), as: UTF8.self)
    }

    /// Appends the canonical UTF-8 octets of `value` to `out`; on failure `out` is left as it was.
    public static func encode(_ value: JSONValue, into out: inout [UInt8]) throws(Failure) {
        let originalCount = out.count
        do throws(Failure) {
            try appendValue(value, to: &out)
        } catch {
            out.removeSubrange(originalCount...)
            throw error
        }
    }

    private static func appendValue(_ value: JSONValue, to out: inout [UInt8]) throws(Failure) {
        switch value {
        case .null: append("null", to: &out)
        case .bool(let b): append(b ? "true" : "false", to: &out)
        case .number(let n): try appendNumber(n, to: &out)
        case .string(let s): try appendString(s, to: &out)
        case .array(let elements):
            out.append(UInt8(ascii: "["))
            var first = true
            for element in elements {
                if !first { out.append(UInt8(ascii: ",")) }
                first = false
                try appendValue(element, to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let object):
            out.append(UInt8(ascii: "{"))
            var first = true
            for member in sortedMembers(object) {
                if !first { out.append(UInt8(ascii: ",")) }
                first = false
                try appendString(member.key, to: &out)
                out.append(UInt8(ascii: ":"))
                try appendValue(member.value, to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// Members in RFC 8785 order: member names compared as unsigned UTF-16 code-unit sequences.
    static func sortedMembers(_ object: JSONObject) -> [JSONMember] {
        object.members.sorted { $0.key.utf16Precedes($1.key) }
    }

    @inline(__always)
    private static func append(_ text: StaticString, to out: inout [UInt8]) {
        out.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// Appends the canonical form of a number literal.
    public static func appendNumber(_ number: JSONNumber, to out: inout [UInt8]) throws(Failure) {
        if let plain = plainIntegerText(number) {
            out.append(contentsOf: plain.utf8)
            return
        }
        guard let value = number.doubleValue else { throw .nonFiniteNumber }
        ECMAScriptNumber.append(value, to: &out)
    }

    /// An integer literal of at most 15 digits is exact in binary64 and prints as itself.
    @inline(__always)
    private static func plainIntegerText(_ number: JSONNumber) -> String? {
        let literal = number.literal
        let utf8 = literal.utf8
        let digitCount = utf8.first == UInt8(ascii: "-") ? utf8.count - 1 : utf8.count
        guard digitCount <= 15, utf8.suffix(digitCount).allSatisfy({ $0 &- 0x30 < 10 }) else { return nil }
        return literal == "-0" ? "0" : literal
    }

    /// Appends a string with JCS escaping (`"`, `\`, control characters; all else as UTF-8); on
    /// failure `out` is left as it was.
    public static func appendString(_ string: String, to out: inout [UInt8]) throws(Failure) {
        let originalCount = out.count
        out.append(UInt8(ascii: "\""))
        var string = string
        let clean = string.withUTF8 { appendEscaped($0, to: &out) }
        guard clean else {
            out.removeSubrange(originalCount...)
            throw .noncharacter
        }
        out.append(UInt8(ascii: "\""))
    }

    /// As ``appendString(_:to:)`` for text given as its UTF-8 octets (a stored SQLite text read in place, with no
    /// `String` made of it): the same octets out. Returns false, leaving `out` as it was, when `bytes` is not valid
    /// UTF-8, so the caller decides what invalid text means.
    public static func appendString(
        utf8 bytes: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]
    ) throws(Failure) -> Bool {
        guard UTF8Validation.firstInvalidOffset(bytes) == nil else { return false }
        let originalCount = out.count
        out.append(UInt8(ascii: "\""))
        guard appendEscaped(bytes, to: &out) else {
            out.removeSubrange(originalCount...)
            throw .noncharacter
        }
        out.append(UInt8(ascii: "\""))
        return true
    }

    /// False when the text holds a noncharacter.
    private static func appendEscaped(_ bytes: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) -> Bool {
        var i = 0
        while i < bytes.count {
            let c = bytes[i]
            switch c {
            case UInt8(ascii: "\""): out.append(0x5C); out.append(0x22)
            case UInt8(ascii: "\\"): out.append(0x5C); out.append(0x5C)
            case 0x08: out.append(0x5C); out.append(UInt8(ascii: "b"))
            case 0x09: out.append(0x5C); out.append(UInt8(ascii: "t"))
            case 0x0A: out.append(0x5C); out.append(UInt8(ascii: "n"))
            case 0x0C: out.append(0x5C); out.append(UInt8(ascii: "f"))
            case 0x0D: out.append(0x5C); out.append(UInt8(ascii: "r"))
            case 0x00..<0x20:
                append("\\u00", to: &out)
                out.append(hexDigit(c >> 4))
                out.append(hexDigit(c & 0x0F))
            case 0xEF...0xF4:
                if Unicode.isNoncharacter(utf8: bytes, at: i) { return false }
                out.append(c)
            default:
                out.append(c)
            }
            i += 1
        }
        return true
    }

    @inline(__always)
    private static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? 0x30 + nibble : UInt8(ascii: "a") + nibble - 10
    }
}

extension Unicode {
    /// True for U+FDD0–U+FDEF and every code point whose low 16 bits are FFFE or FFFF.
    @inlinable
    public static func isNoncharacter(_ scalar: Unicode.Scalar) -> Bool {
        let v = scalar.value
        return (0xFDD0...0xFDEF).contains(v) || v & 0xFFFE == 0xFFFE
    }

    /// Noncharacter test on the (valid) UTF-8 sequence that starts at `i`.
    static func isNoncharacter<Bytes: RandomAccessCollection>(utf8 bytes: Bytes, at i: Int) -> Bool
    where Bytes.Element == UInt8, Bytes.Index == Int {
        let lead = bytes[i]
        if lead == 0xEF, i + 2 < bytes.endIndex {
            let b1 = bytes[i + 1], b2 = bytes[i + 2]
            if b1 == 0xB7 && (0x90...0xAF).contains(b2) { return true }  // U+FDD0–U+FDEF
            if b1 == 0xBF && (b2 == 0xBE || b2 == 0xBF) { return true }  // U+FFFE, U+FFFF
            return false
        }
        if lead >= 0xF0, i + 3 < bytes.endIndex {
            let b1 = bytes[i + 1], b2 = bytes[i + 2], b3 = bytes[i + 3]
            return b1 & 0x0F == 0x0F && b2 == 0xBF && (b3 == 0xBE || b3 == 0xBF)
        }
        return false
    }

    /// True when the string holds a Unicode noncharacter.
    public static func containsNoncharacter(_ string: String) -> Bool {
        string.unicodeScalars.contains(where: isNoncharacter)
    }
}
