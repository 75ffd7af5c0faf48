/// `Number.prototype.toString` for finite binary64 values: the number layout RFC 8785 requires.
///
/// The shortest round-tripping digits come from Swift's own `description` (shortest, closest,
/// as ECMAScript requires); only the layout rules are ours. See `spec/integrity.md` §2 step 5.
public enum ECMAScriptNumber {
    /// Formats a finite double. Both zeros give `0`.
    public static func format(_ value: Double) -> String {
        precondition(value.isFinite, "RFC 8785 has no form for NaN or infinity")
        if value == 0 { return "0" }
        let (digits, n) = shortestDigits(of: value.magnitude)
        let k = digits.count
        var out = value < 0 ? "-" : ""
        if k <= n && n <= 21 {
            out += digits
            out += String(repeating: "0", count: n - k)
        } else if 0 < n && n <= 21 {
            out += digits.prefix(n)
            out += "."
            out += digits.dropFirst(n)
        } else if -6 < n && n <= 0 {
            out += "0."
            out += String(repeating: "0", count: -n)
            out += digits
        } else {
            out += digits.prefix(1)
            if k > 1 {
                out += "."
                out += digits.dropFirst(1)
            }
            out += n - 1 >= 0 ? "e+" : "e-"
            out += String((n - 1).magnitude)
        }
        return out
    }

    /// The digits d1…dk (no leading or trailing zeros) and exponent n with value = 0.d1…dk × 10^n.
    static func shortestDigits(of magnitude: Double) -> (digits: String, exponent: Int) {
        let text = magnitude.description.utf8
        var mantissa: [UInt8] = []
        mantissa.reserveCapacity(24)
        var integerDigitCount = 0
        var seenPoint = false
        var exponent = 0
        var iterator = text.makeIterator()
        while let c = iterator.next() {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                mantissa.append(c)
                if !seenPoint { integerDigitCount += 1 }
            case UInt8(ascii: "."):
                seenPoint = true
            case UInt8(ascii: "e"), UInt8(ascii: "E"):
                var exponentText = ""
                while let e = iterator.next() { exponentText.unicodeScalars.append(Unicode.Scalar(e)) }
                exponent = Int(exponentText) ?? 0
            default:
                break
            }
        }
        var pointPosition = integerDigitCount + exponent
        var first = 0
        while first < mantissa.count - 1 && mantissa[first] == UInt8(ascii: "0") {
            first += 1
            pointPosition -= 1
        }
        var last = mantissa.count
        while last > first + 1 && mantissa[last - 1] == UInt8(ascii: "0") { last -= 1 }
        return (String(decoding: mantissa[first..<last], as: UTF8.self), pointPosition)
    }
}
