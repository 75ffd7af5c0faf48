/// `Number.prototype.toString` for finite binary64 values: the number layout RFC 8785 requires.
///
/// The shortest round-tripping digits come from Swift's own `description` (shortest, closest,
/// as ECMAScript requires); only the layout rules are ours. See `spec/integrity.md` §2 step 5.
public enum ECMAScriptNumber {
    /// Longest possible output: `-0.00000` and 17 digits, or `-d.` 16 digits `e-324`.
    private static let maximumLength = 32

    /// Formats a finite double. Both zeros give `0`.
    public static func format(_ value: Double) -> String {
        precondition(value.isFinite, "RFC 8785 has no form for NaN or infinity")
        return withFormatted(value) { String(decoding: $0, as: UTF8.self) }
    }

    /// Appends the octets of ``format(_:)`` to `out` without building a `String`.
    public static func append(_ value: Double, to out: inout [UInt8]) {
        precondition(value.isFinite, "RFC 8785 has no form for NaN or infinity")
        withFormatted(value) { out.append(contentsOf: $0) }
    }

    private static func withFormatted<R>(_ value: Double, _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 2 * maximumLength) { scratch in
            let output = scratch.baseAddress.unsafelyUnwrapped
            let length = write(value, to: output, digitScratch: output + maximumLength)
            return body(UnsafeBufferPointer(start: output, count: length))
        }
    }

    /// Writes the layout of `value` at `out` and returns its length.
    private static func write(
        _ value: Double, to out: UnsafeMutablePointer<UInt8>, digitScratch: UnsafeMutablePointer<UInt8>
    ) -> Int {
        if value == 0 {
            out[0] = UInt8(ascii: "0")
            return 1
        }
        let (digits, n) = shortestDigits(of: value.magnitude, into: digitScratch)
        let k = digits.count
        var length = 0
        func put(_ byte: UInt8) {
            out[length] = byte
            length += 1
        }
        func put(_ slice: Slice<UnsafeBufferPointer<UInt8>>) {
            for byte in slice { put(byte) }
        }
        func putZeros(_ count: Int) {
            for _ in 0..<max(count, 0) { put(UInt8(ascii: "0")) }
        }

        if value < 0 { put(UInt8(ascii: "-")) }
        if k <= n && n <= 21 {
            put(digits[...])
            putZeros(n - k)
        } else if 0 < n && n <= 21 {
            put(digits[..<n])
            put(UInt8(ascii: "."))
            put(digits[n...])
        } else if -6 < n && n <= 0 {
            put(UInt8(ascii: "0"))
            put(UInt8(ascii: "."))
            putZeros(-n)
            put(digits[...])
        } else {
            put(digits[0])
            if k > 1 {
                put(UInt8(ascii: "."))
                put(digits[1...])
            }
            put(UInt8(ascii: "e"))
            put(n - 1 >= 0 ? UInt8(ascii: "+") : UInt8(ascii: "-"))
            // Finite binary64 exponents stay below 1000: at most three digits.
            let power = Int((n - 1).magnitude)
            if power >= 100 { put(UInt8(ascii: "0") + UInt8(power / 100)) }
            if power >= 10 { put(UInt8(ascii: "0") + UInt8(power / 10 % 10)) }
            put(UInt8(ascii: "0") + UInt8(power % 10))
        }
        return length
    }

    /// The digits d1…dk (no leading or trailing zeros, written at `scratch`) and the exponent n
    /// with value = 0.d1…dk × 10^n, read from Swift's shortest round-trip `description`.
    private static func shortestDigits(
        of magnitude: Double, into scratch: UnsafeMutablePointer<UInt8>
    ) -> (digits: UnsafeBufferPointer<UInt8>, exponent: Int) {
        var count = 0
        var integerDigitCount = 0
        var seenPoint = false
        var exponent = 0
        var exponentSign = 1
        var inExponent = false
        for c in magnitude.description.utf8 {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                if inExponent {
                    exponent = exponent * 10 + Int(c - UInt8(ascii: "0"))
                } else {
                    scratch[count] = c
                    count += 1
                    if !seenPoint { integerDigitCount += 1 }
                }
            case UInt8(ascii: "."): seenPoint = true
            case UInt8(ascii: "e"), UInt8(ascii: "E"): inExponent = true
            case UInt8(ascii: "-"): exponentSign = -1
            default: break
            }
        }
        var pointPosition = integerDigitCount + exponentSign * exponent
        var first = 0
        while first < count - 1 && scratch[first] == UInt8(ascii: "0") {
            first += 1
            pointPosition -= 1
        }
        var last = count
        while last > first + 1 && scratch[last - 1] == UInt8(ascii: "0") { last -= 1 }
        return (UnsafeBufferPointer(start: scratch + first, count: last - first), pointPosition)
    }
}
