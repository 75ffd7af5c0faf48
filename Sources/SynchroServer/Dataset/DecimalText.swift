/// Exact decimal arithmetic for generated `decimal` and `float` values: a value is an `Int64`
/// count of units of 10^-scale, so no decimal ever passes through binary floating point
/// (`spec/wire-protocol.md` §2.7).
enum DecimalText {
    /// 10^0 … 10^18, every power that fits in `Int64`.
    static let powersOfTen: [Int64] = (0...18).map { exponent in
        (0..<exponent).reduce(Int64(1)) { power, _ in power * 10 }
    }

    /// The exact number of units of 10^-scale written by a plain decimal literal
    /// (`-?digits(.digits)?`, no exponent, no `+`); nil when the literal has another form, has
    /// nonzero digits beyond `scale`, or does not fit.
    static func units(_ literal: String, scale: Int) -> Int64? {
        guard scale >= 0, scale < powersOfTen.count else { return nil }
        var bytes = Array(literal.utf8)[...]
        let negative = bytes.first == UInt8(ascii: "-")
        if negative { bytes = bytes.dropFirst() }
        let parts = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count <= 2, let whole = parts.first, !whole.isEmpty else { return nil }
        let fraction = parts.count == 2 ? parts[1] : []
        guard parts.count == 1 || !fraction.isEmpty else { return nil }
        guard whole.allSatisfy(isDigit), fraction.allSatisfy(isDigit) else { return nil }
        // Digits past the scale must all be zero: the value has to be exact at that scale.
        guard fraction.dropFirst(scale).allSatisfy({ $0 == UInt8(ascii: "0") }) else { return nil }
        var magnitude: Int64 = 0
        let kept = Array(fraction.prefix(scale))
        let padded = kept + [UInt8](repeating: UInt8(ascii: "0"), count: scale - kept.count)
        for digit in Array(whole) + padded {
            let (times, overflow1) = magnitude.multipliedReportingOverflow(by: 10)
            let (plus, overflow2) = times.addingReportingOverflow(Int64(digit - UInt8(ascii: "0")))
            guard !overflow1, !overflow2 else { return nil }
            magnitude = plus
        }
        return negative ? -magnitude : magnitude
    }

    /// The canonical decimal text of `units` × 10^-scale: no trailing fractional zero, no
    /// trailing point, no `-0` (`spec/integrity.md` §1).
    static func canonical(units: Int64, scale: Int) -> String {
        if units == 0 { return "0" }
        let magnitude = units.magnitude
        let power = UInt64(powersOfTen[scale])
        var text = units < 0 ? "-" : ""
        text += String(magnitude / power)
        var fraction = magnitude % power
        guard fraction != 0 else { return text }
        var digits = scale
        while fraction % 10 == 0 {
            fraction /= 10
            digits -= 1
        }
        let fractionText = String(fraction)
        text += "."
        text += String(repeating: "0", count: digits - fractionText.utf8.count)
        text += fractionText
        return text
    }

    /// How many digits the integer part of `units` × 10^-scale has (0 for `0.05`).
    static func integerDigits(units: Int64, scale: Int) -> Int {
        let whole = units.magnitude / UInt64(powersOfTen[scale])
        return whole == 0 ? 0 : String(whole).utf8.count
    }

    private static func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }
}
