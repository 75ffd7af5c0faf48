// Recognizers for text that is already canonical, so that the hot path can accept a value in one
// pass over its octets instead of parsing, converting and re-encoding it.
//
// Each recognizer accepts a *subset* of what the full check in `PortableValue` accepts, and
// accepts nothing the full check would refuse or encode differently: a `true` is final, a
// `false`/`nil` only means "not decided here" and the caller runs the full check, which then
// names the broken rule (or accepts a valid form these shortcuts do not cover, such as `1e+21`).

/// Number literals that are their own RFC 8785 (ECMAScript) form, with their binary64 value.
enum CanonicalNumberText {
    /// 10^0 … 10^22: every one is exact in binary64.
    private static let powersOfTen: [Double] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
        1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
    ]

    /// The binary64 bit pattern of a literal with at most 15 significant digits that is already
    /// the ECMAScript rendering of its nearest binary64 value; nil for anything else.
    ///
    /// Accepted: `0`, `-?[1-9][0-9]*` and `-?[1-9][0-9]*\.[0-9]*[1-9]` with at most 15 digits in
    /// all, and `-?0\.0{0,5}[1-9]([0-9]*[1-9])?` with at most 15 digits after the zeros. Why the
    /// text is then canonical: binary64 keeps 15 significant decimal digits (DBL_DIG), so two
    /// different decimals of at most 15 significant digits never share a nearest binary64. No
    /// shorter digit string therefore round-trips, the literal's digits (no trailing zero) are
    /// the shortest ones, and the layout is the fixed-point one ECMAScript uses for decimal
    /// exponents −6 < n ≤ 21 (at most five zeros after `0.`), which is why exponents, `-0`,
    /// leading or trailing zeros, and more digits are left to the full check.
    ///
    /// Why the value is exact: the digits form an integer M < 10^15 < 2^53 and the literal is
    /// M / 10^f with f ≤ 20, both exact in binary64, so one IEEE division rounds the exact
    /// quotient to nearest, ties to even (Clinger's fast path).
    static func binary64Bits(_ u: UnsafeBufferPointer<UInt8>) -> UInt64? {
        let n = u.count
        guard n > 0 else { return nil }
        let negative = u[0] == UInt8(ascii: "-")
        var i = negative ? 1 : 0
        guard i < n else { return nil }
        var mantissa: UInt64 = 0
        var significantDigits = 0
        let lead = u[i]
        i &+= 1
        if lead == UInt8(ascii: "0") {
            // `0` is +0; `-0` (negative zero) is for the full check to name.
            if i == n { return negative ? nil : 0 }
            guard u[i] == UInt8(ascii: ".") else { return nil }
        } else {
            guard lead &- UInt8(ascii: "1") < 9 else { return nil }
            mantissa = UInt64(lead &- UInt8(ascii: "0"))
            significantDigits = 1
            while i < n {
                let digit = u[i] &- UInt8(ascii: "0")
                guard digit < 10 else { break }
                mantissa = mantissa &* 10 &+ UInt64(digit)
                significantDigits &+= 1
                i &+= 1
            }
            guard significantDigits <= 15 else { return nil }
            if i == n {
                let magnitude = Double(mantissa)
                return (negative ? -magnitude : magnitude).bitPattern
            }
            guard u[i] == UInt8(ascii: ".") else { return nil }
        }
        i &+= 1
        let fractionStart = i
        var leadingZeros = 0
        while i < n {
            let digit = u[i] &- UInt8(ascii: "0")
            guard digit < 10 else { return nil }
            if mantissa == 0 && digit == 0 {
                leadingZeros &+= 1
            } else {
                significantDigits &+= 1
                guard significantDigits <= 15 else { return nil }
            }
            mantissa = mantissa &* 10 &+ UInt64(digit)
            i &+= 1
        }
        let fractionDigits = n &- fractionStart
        guard fractionDigits > 0, u[n &- 1] != UInt8(ascii: "0"), leadingZeros <= 5 else { return nil }
        let magnitude = Double(mantissa) / powersOfTen[fractionDigits]
        return (negative ? -magnitude : magnitude).bitPattern
    }
}

/// JSON text that is I-JSON and already byte-identical to its RFC 8785 form (the `json` type).
///
/// One pass, no tree, no strings: the text is accepted only if it has no whitespace; every
/// string uses exactly the JCS escapes (`\"`, `\\`, `\b`, `\f`, `\n`, `\r`, `\t`, `\u00xx` in
/// lowercase for the other control characters) and holds no noncharacter; member names are
/// escape-free and strictly ascending in UTF-16 code-unit order (so also unique); every number
/// is accepted by ``CanonicalNumberText`` (at most 15 significant digits, so finite and within
/// ±(2^53−1)); and nesting and size stay within the parser's protocol limits. Anything else —
/// including every invalid document — is left to the full check.
enum CanonicalJSONText {
    /// True when `text` (valid UTF-8, as every Swift string is) is canonical I-JSON by the rules above.
    static func isCanonical(_ text: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = text.baseAddress, text.count > 0,
              text.count <= JSONLimits.protocolDefault.maxBytes
        else { return false }
        var scanner = Scanner(base: base, end: text.count, maxDepth: JSONLimits.protocolDefault.maxDepth)
        return scanner.value(depth: 0) && scanner.position == text.count
    }

    private struct Scanner {
        let base: UnsafePointer<UInt8>
        let end: Int
        let maxDepth: Int
        var position = 0

        /// The whole document, for the noncharacter test (which looks ahead up to three octets).
        var text: UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(start: base, count: end) }

        mutating func value(depth: Int) -> Bool {
            guard position < end else { return false }
            switch base[position] {
            case UInt8(ascii: "\""): return string(allowEscapes: true)
            case UInt8(ascii: "{"): return object(depth: depth &+ 1)
            case UInt8(ascii: "["): return array(depth: depth &+ 1)
            case UInt8(ascii: "t"): return literal("true")
            case UInt8(ascii: "f"): return literal("false")
            case UInt8(ascii: "n"): return literal("null")
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return number()
            default: return false
            }
        }

        private mutating func literal(_ word: StaticString) -> Bool {
            let length = word.utf8CodeUnitCount
            guard end &- position >= length,
                  ByteRun.equal(base + position, word.utf8Start, count: length)
            else { return false }
            position &+= length
            return true
        }

        /// The longest run of number characters at the cursor, judged as a whole.
        private mutating func number() -> Bool {
            let start = position
            scan: while position < end {
                switch base[position] {
                case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "+"),
                     UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E"):
                    position &+= 1
                default:
                    break scan
                }
            }
            let literal = UnsafeBufferPointer(start: base + start, count: position &- start)
            return CanonicalNumberText.binary64Bits(literal) != nil
        }

        /// A string at the cursor (on its opening quote), written exactly as JCS writes it.
        private mutating func string(allowEscapes: Bool) -> Bool {
            position &+= 1
            while position < end {
                let c = base[position]
                if c == UInt8(ascii: "\"") {
                    position &+= 1
                    return true
                }
                if c == UInt8(ascii: "\\") {
                    guard allowEscapes, escape() else { return false }
                    continue
                }
                guard c >= 0x20 else { return false }
                if c >= 0xEF && PortableValue.isNoncharacter(text, at: position) { return false }
                position &+= 1
            }
            return false
        }

        /// One escape at the cursor (on its backslash), only in the form JCS produces.
        private mutating func escape() -> Bool {
            guard end &- position >= 2 else { return false }
            switch base[position &+ 1] {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "b"), UInt8(ascii: "f"), UInt8(ascii: "n"),
                 UInt8(ascii: "r"), UInt8(ascii: "t"):
                position &+= 2
                return true
            case UInt8(ascii: "u"):
                // `\u00` + two lowercase hex digits, for a control character without a short escape.
                guard end &- position >= 6, base[position &+ 2] == UInt8(ascii: "0"),
                      base[position &+ 3] == UInt8(ascii: "0")
                else { return false }
                let high = base[position &+ 4], low = base[position &+ 5]
                guard high == UInt8(ascii: "0") || high == UInt8(ascii: "1") else { return false }
                let lowValue: UInt8
                switch low {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): lowValue = low &- UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): lowValue = low &- UInt8(ascii: "a") &+ 10
                default: return false
                }
                let scalar = (high &- UInt8(ascii: "0")) << 4 | lowValue
                switch scalar {
                case 0x08, 0x09, 0x0A, 0x0C, 0x0D: return false
                default: break
                }
                position &+= 6
                return true
            default:
                return false
            }
        }

        private mutating func array(depth: Int) -> Bool {
            guard depth <= maxDepth else { return false }
            position &+= 1
            if position < end && base[position] == UInt8(ascii: "]") {
                position &+= 1
                return true
            }
            while true {
                guard value(depth: depth), position < end else { return false }
                let c = base[position]
                position &+= 1
                if c == UInt8(ascii: "]") { return true }
                guard c == UInt8(ascii: ",") else { return false }
            }
        }

        private mutating func object(depth: Int) -> Bool {
            guard depth <= maxDepth else { return false }
            position &+= 1
            if position < end && base[position] == UInt8(ascii: "}") {
                position &+= 1
                return true
            }
            var previousStart = -1
            var previousLength = 0
            while true {
                guard position < end, base[position] == UInt8(ascii: "\"") else { return false }
                let keyStart = position &+ 1
                guard string(allowEscapes: false) else { return false }
                let keyLength = position &- 1 &- keyStart
                if previousStart >= 0 {
                    let previous = UnsafeBufferPointer(start: base + previousStart, count: previousLength)
                    let key = UnsafeBufferPointer(start: base + keyStart, count: keyLength)
                    guard ByteRun.utf16Precedes(previous, key) else { return false }
                }
                previousStart = keyStart
                previousLength = keyLength
                guard position < end, base[position] == UInt8(ascii: ":") else { return false }
                position &+= 1
                guard value(depth: depth), position < end else { return false }
                let c = base[position]
                position &+= 1
                if c == UInt8(ascii: "}") { return true }
                guard c == UInt8(ascii: ",") else { return false }
            }
        }
    }
}

/// Comparisons of octet runs in unmanaged memory.
enum ByteRun {
    /// Whether `count` octets at `a` and `b` are identical.
    @inline(__always)
    static func equal(_ a: UnsafePointer<UInt8>, _ b: UnsafePointer<UInt8>, count: Int) -> Bool {
        var i = 0
        let rawA = UnsafeRawPointer(a), rawB = UnsafeRawPointer(b)
        while i &+ 8 <= count {
            if rawA.loadUnaligned(fromByteOffset: i, as: UInt64.self)
                != rawB.loadUnaligned(fromByteOffset: i, as: UInt64.self) { return false }
            i &+= 8
        }
        while i < count {
            if a[i] != b[i] { return false }
            i &+= 1
        }
        return true
    }

    /// Whether two octet runs are identical.
    @inline(__always)
    static func equal(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
        guard a.count == b.count else { return false }
        guard a.count > 0 else { return true }
        return equal(a.baseAddress.unsafelyUnwrapped, b.baseAddress.unsafelyUnwrapped, count: a.count)
    }

    /// Unsigned octet order of two runs, a proper prefix first (`lexicographicallyPrecedes` on octets):
    /// negative, zero or positive. Compares eight octets at a time as big-endian words, so that long shared
    /// prefixes (every row identity of a table starts with the same domain, table ID and key field ID) cost
    /// a few word comparisons instead of an octet loop.
    @inline(__always)
    static func compare(
        _ a: UnsafePointer<UInt8>, count countA: Int, _ b: UnsafePointer<UInt8>, count countB: Int
    ) -> Int {
        let shared = Swift.min(countA, countB)
        let rawA = UnsafeRawPointer(a), rawB = UnsafeRawPointer(b)
        var i = 0
        while i &+ 8 <= shared {
            let x = UInt64(bigEndian: rawA.loadUnaligned(fromByteOffset: i, as: UInt64.self))
            let y = UInt64(bigEndian: rawB.loadUnaligned(fromByteOffset: i, as: UInt64.self))
            if x != y { return x < y ? -1 : 1 }
            i &+= 8
        }
        while i < shared {
            if a[i] != b[i] { return a[i] < b[i] ? -1 : 1 }
            i &+= 1
        }
        return countA == countB ? 0 : (countA < countB ? -1 : 1)
    }

    /// ``compare(_:count:_:count:)`` of two buffers.
    @inline(__always)
    static func compare(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Int {
        guard let baseA = a.baseAddress, let baseB = b.baseAddress else {
            return a.count == b.count ? 0 : (a.count < b.count ? -1 : 1)
        }
        return compare(baseA, count: a.count, baseB, count: b.count)
    }

    /// ``compare(_:_:)`` of `a` and the concatenation `head || tail`.
    static func compare(
        _ a: UnsafeBufferPointer<UInt8>, _ head: UnsafeBufferPointer<UInt8>, _ tail: UnsafeBufferPointer<UInt8>
    ) -> Int {
        // Shorter than `head`: decided within `head` (never equal).
        guard a.count >= head.count else { return compare(a, head) }
        let order = compare(UnsafeBufferPointer(rebasing: a[..<head.count]), head)
        guard order == 0 else { return order }
        return compare(UnsafeBufferPointer(rebasing: a[head.count...]), tail)
    }

    /// Strict unsigned UTF-16 code-unit order of two valid UTF-8 runs, exactly as
    /// `String.utf16Precedes` computes it: UTF-8 octet order, except that a character above
    /// U+FFFF (lead F0–F4) sorts before U+E000–U+FFFF (lead EE/EF).
    static func utf16Precedes(_ x: UnsafeBufferPointer<UInt8>, _ y: UnsafeBufferPointer<UInt8>) -> Bool {
        let shared = Swift.min(x.count, y.count)
        var i = 0
        while i < shared && x[i] == y[i] { i &+= 1 }
        if i == shared { return x.count < y.count }
        let p = x[i], q = y[i]
        if p >= 0xEE && q >= 0xEE && (p >= 0xF0) != (q >= 0xF0) { return p >= 0xF0 }
        return p < q
    }
}
