import Testing
@testable import SynchroProtocol

/// The digits d1…dk and exponent n (value = 0.d1…dk × 10^n) read back from a formatted number.
private struct DecimalForm {
    var negative: Bool
    var digits: [UInt8]
    var exponent: Int
    var usesExponentNotation: Bool

    init?(_ text: String) {
        var body = Substring(text)
        negative = body.first == "-"
        if negative { body = body.dropFirst() }
        usesExponentNotation = body.contains("e")
        if usesExponentNotation {
            let parts = body.split(separator: "e")
            guard parts.count == 2, let power = Int(parts[1]) else { return nil }
            digits = Array(parts[0].utf8.filter { $0 != UInt8(ascii: ".") })
            exponent = power + 1
        } else if let point = body.firstIndex(of: ".") {
            let whole = body[..<point], fraction = body[body.index(after: point)...]
            if whole == "0" {
                let zeros = fraction.prefix { $0 == "0" }.count
                digits = Array(fraction.dropFirst(zeros).utf8)
                exponent = -zeros
            } else {
                digits = Array(whole.utf8) + Array(fraction.utf8)
                exponent = whole.count
            }
        } else {
            exponent = body.count
            digits = Array(body.utf8)
            while digits.count > 1 && digits.last == UInt8(ascii: "0") { digits.removeLast() }
        }
    }

    /// `0.<digits>e<exponent>`, which `Double(_:)` reads exactly.
    static func scientific(_ digits: [UInt8], _ exponent: Int, negative: Bool) -> String {
        (negative ? "-" : "") + "0." + String(decoding: digits, as: UTF8.self) + "e\(exponent)"
    }

    /// The decimal string one unit in the last place larger (`129` → `130`, `99` → `100`).
    static func incremented(_ digits: [UInt8]) -> [UInt8] {
        var result = digits
        var i = result.count - 1
        while i >= 0 {
            if result[i] == UInt8(ascii: "9") {
                result[i] = UInt8(ascii: "0")
                i -= 1
            } else {
                result[i] += 1
                return result
            }
        }
        return [UInt8(ascii: "1")] + result
    }
}

/// Checks the properties every output must have: it reads back as `value`, has the layout the
/// spec assigns to its exponent, and no decimal with one digit fewer reads back as `value`.
private func expectWellFormed(_ value: Double, sourceLocation: SourceLocation = #_sourceLocation) {
    let text = ECMAScriptNumber.format(value)
    #expect(Double(text) == value, "\(value.bitPattern): \(text)", sourceLocation: sourceLocation)
    var appended = Array("x".utf8)
    ECMAScriptNumber.append(value, to: &appended)
    #expect(appended == Array("x\(text)".utf8), sourceLocation: sourceLocation)
    guard let form = DecimalForm(text) else {
        Issue.record("unreadable output \(text)", sourceLocation: sourceLocation)
        return
    }
    if value == 0 {
        #expect(text == "0", sourceLocation: sourceLocation)
        return
    }
    let k = form.digits.count, n = form.exponent
    #expect(form.negative == (value < 0), sourceLocation: sourceLocation)
    #expect(k <= 17 && form.digits.first != UInt8(ascii: "0") && form.digits.last != UInt8(ascii: "0"),
            "\(text)", sourceLocation: sourceLocation)
    #expect(form.usesExponentNotation == !(-6 < n && n <= 21), "\(text)", sourceLocation: sourceLocation)
    guard k > 1 else { return }
    // If any (k-1)-digit decimal rounded to `value`, one of these two neighbours would.
    let shorter = Array(form.digits.dropLast())
    for candidate in [shorter, DecimalForm.incremented(shorter)] {
        let candidateText = DecimalForm.scientific(candidate, n, negative: form.negative)
        #expect(Double(candidateText) != value, "\(text) is not shortest: \(candidateText)",
                sourceLocation: sourceLocation)
    }
}

@Suite("ECMAScript number layout")
struct ECMAScriptNumberTests {
    /// Source literal (read with correct rounding, as a JavaScript engine reads it) → expected text.
    /// Literals rather than `Double` constants: Swift refuses inexact float literals at compile time.
    static let layouts: [(String, String)] = [
        ("0", "0"), ("-0", "0"), ("1", "1"), ("-1", "-1"), ("100", "100"), ("1e+2", "100"), ("1.0", "1"),
        ("1e0", "1"), ("1.5", "1.5"), ("123.456", "123.456"), ("-123.456", "-123.456"), ("0.1", "0.1"),
        ("1e20", "100000000000000000000"), ("1e21", "1e+21"), ("-1e21", "-1e+21"), ("1e22", "1e+22"),
        ("1e23", "1e+23"), ("123456789012345680000", "123456789012345680000"), ("1e16", "10000000000000000"),
        ("9007199254740992", "9007199254740992"), ("9007199254740993", "9007199254740992"),
        ("1e-6", "0.000001"), ("1e-7", "1e-7"), ("1e-5", "0.00001"), ("1.5e-7", "1.5e-7"),
        ("-1.5e-7", "-1.5e-7"), ("0.000001234", "0.000001234"), ("1.234e-7", "1.234e-7"),
        ("123e-20", "1.23e-18"), ("1e300", "1e+300"), ("5e-324", "5e-324"), ("-5e-324", "-5e-324"),
        ("4.9406564584124654e-324", "5e-324"), ("1e-323", "1e-323"), ("2.5e-323", "2.5e-323"),
        ("2.2250738585072014e-308", "2.2250738585072014e-308"), ("2.225073858507201e-308", "2.225073858507201e-308"),
        ("1.7976931348623157e+308", "1.7976931348623157e+308"),
        ("-1.7976931348623157e+308", "-1.7976931348623157e+308"),
        ("333333333.33333329", "333333333.3333333"), ("0.30000000000000004", "0.30000000000000004"),
    ]

    @Test("Number.prototype.toString layout for each case of spec/integrity.md §2 step 5", arguments: layouts)
    func formatsLayouts(source: String, expected: String) throws {
        let value = try #require(Double(source))
        #expect(ECMAScriptNumber.format(value) == expected)
    }

    @Test("0.1 + 0.2 prints as 0.30000000000000004")
    func formatsSum() {
        #expect(ECMAScriptNumber.format(0.1 + 0.2) == "0.30000000000000004")
    }

    /// RFC 8785 Appendix B (and neighbours), as IEEE 754 bit patterns; expected strings checked
    /// against `String(x)` of a JavaScript engine.
    static let appendixB: [(UInt64, String)] = [
        (0x0000_0000_0000_0000, "0"), (0x8000_0000_0000_0000, "0"),
        (0x0000_0000_0000_0001, "5e-324"), (0x8000_0000_0000_0001, "-5e-324"),
        (0x7FEF_FFFF_FFFF_FFFF, "1.7976931348623157e+308"), (0xFFEF_FFFF_FFFF_FFFF, "-1.7976931348623157e+308"),
        (0x4340_0000_0000_0000, "9007199254740992"), (0xC340_0000_0000_0000, "-9007199254740992"),
        (0x4340_0000_0000_0001, "9007199254740994"), (0x4330_0000_0000_0001, "4503599627370497"),
        (0x4430_0000_0000_0000, "295147905179352830000"),
        (0x44B5_2D02_C7E1_4AF5, "9.999999999999997e+22"), (0x44B5_2D02_C7E1_4AF6, "1e+23"),
        (0x44B5_2D02_C7E1_4AF7, "1.0000000000000001e+23"),
        (0x444B_1AE4_D6E2_EF4E, "999999999999999700000"), (0x444B_1AE4_D6E2_EF4F, "999999999999999900000"),
        (0x444B_1AE4_D6E2_EF50, "1e+21"),
        (0x3EB0_C6F7_A0B5_ED8C, "9.999999999999997e-7"), (0x3EB0_C6F7_A0B5_ED8D, "0.000001"),
        (0x3EB0_C6F7_A0B5_ED8E, "0.0000010000000000000002"),
        (0x41B3_DE43_5555_5553, "333333333.3333332"), (0x41B3_DE43_5555_5554, "333333333.33333325"),
        (0x41B3_DE43_5555_5555, "333333333.3333333"), (0x41B3_DE43_5555_5556, "333333333.3333334"),
        (0x41B3_DE43_5555_5557, "333333333.33333343"),
        (0xBECB_F647_612F_3696, "-0.0000033333333333333333"), (0x4314_3FF3_C1CB_0959, "1424953923781206.2"),
        (0x000F_FFFF_FFFF_FFFF, "2.225073858507201e-308"), (0x0010_0000_0000_0000, "2.2250738585072014e-308"),
        (0x0000_0000_0000_0002, "1e-323"),
    ]

    @Test("RFC 8785 Appendix B sample values", arguments: appendixB)
    func formatsAppendixB(bits: UInt64, expected: String) {
        #expect(ECMAScriptNumber.format(Double(bitPattern: bits)) == expected)
    }

    @Test("a literal's canonical form goes through its nearest binary64 value",
          arguments: [
            ("9007199254740993", "9007199254740992"), ("4.9406564584124654e-324", "5e-324"),
            ("2.2250738585072014e-308", "2.2250738585072014e-308"), ("1E0", "1"), ("1.0", "1"), ("-0", "0"),
            ("0.0000001", "1e-7"), ("123e-20", "1.23e-18"), ("1e+2", "100"), ("1e-400", "0"),
            ("2.4703282292062328e-324", "5e-324"), ("2.4703282292062327e-324", "0"),
          ])
    func canonicalLiteral(literal: String, expected: String) throws {
        #expect(try #require(JSONNumber(literal: literal)).canonicalLiteral == expected)
    }

    @Test("JSONNumber from a Double uses the ECMAScript form; non-finite values have none")
    func numberFromDouble() {
        #expect(JSONNumber(1e21)?.literal == "1e+21")
        #expect(JSONNumber(-0.0)?.literal == "0")
        #expect(JSONNumber(Double.infinity) == nil)
        #expect(JSONNumber(Double.nan) == nil)
        #expect(JSONNumber(Int64.min).literal == "-9223372036854775808")
    }

    @Test("outputs read back exactly, use the spec's layout and are shortest: random bit patterns")
    func randomBitPatterns() {
        var rng = JSONTestRandom(seed: 0x8785)
        var checked = 0
        while checked < 4000 {
            let value = Double(bitPattern: rng.next())
            guard value.isFinite else { continue }
            expectWellFormed(value)
            checked += 1
        }
        // Subnormals and the bottom of the normal range, where digit counts vary most.
        for _ in 0..<500 {
            expectWellFormed(Double(bitPattern: rng.next() & 0x001F_FFFF_FFFF_FFFF))
        }
    }

    @Test("outputs read back exactly, use the spec's layout and are shortest: decimal-looking values")
    func randomDecimalValues() {
        var rng = JSONTestRandom(seed: 0x3339)
        var powers: [Double] = [1]
        for _ in 0..<30 { powers.append(powers[powers.count - 1] * 10) }
        for _ in 0..<4000 {
            let mantissa = Double(rng.next() % 1_000_000_000_000)
            let scale = powers[rng.next(below: powers.count)]
            let value = rng.next() & 1 == 0 ? mantissa / scale : mantissa * scale / 1e9
            expectWellFormed(rng.next() & 2 == 0 ? value : -value)
        }
        for exponent in -330...308 {
            expectWellFormed(Double("1e\(exponent)")!)
            expectWellFormed(Double("1.5e\(exponent)")!)
        }
    }
}
