import Testing
@testable import SynchroProtocol

/// The RFC 8785 text of a JSON document given as text.
private func canonical(_ json: String) throws -> String {
    try CanonicalJSON.string(StrictJSONParser().parse(json))
}

private func canonicalFailure(_ json: String) throws -> CanonicalJSON.Failure? {
    let value = try StrictJSONParser().parse(json)
    do {
        _ = try CanonicalJSON.encode(value)
        return nil
    } catch {
        return error
    }
}

@Suite("RFC 8785 canonical JSON")
struct CanonicalJSONTests {
    // MARK: Member order

    @Test("members sort by UTF-16 code units: U+10000 (D800 DC00) precedes U+E000 and U+FFFD")
    func sortsByUTF16CodeUnits() throws {
        let json = #"{"\ufffd":5,"\ue000":4,"\ud800\udc00":3,"a":2,"":1,"\u00e9":6,"\u20ac":7}"#
        #expect(try canonical(json)
                == "{\"\":1,\"a\":2,\"é\":6,\"€\":7,\"\u{10000}\":3,\"\u{E000}\":4,\"\u{FFFD}\":5}")
        // The same names in UTF-8 octet order put U+10000 last: the two orders must not be mixed up.
        let names = ["\u{FFFD}", "\u{E000}", "\u{10000}", "a"]
        #expect(names.sorted { $0.utf8Precedes($1) } == ["a", "\u{E000}", "\u{FFFD}", "\u{10000}"])
        #expect(names.sorted { $0.utf16Precedes($1) } == ["a", "\u{10000}", "\u{E000}", "\u{FFFD}"])
    }

    @Test("the RFC 8785 §3.2.3 sorting example")
    func rfcSortingExample() throws {
        let json = #"""
        {"\u20ac":"Euro Sign","\r":"Carriage Return","\ufb33":"Hebrew Letter Dalet With Dagesh","1":"One",
         "\ud83d\ude00":"Emoji: Grinning Face","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis"}
        """#
        let object = try #require(try StrictJSONParser().parse(json).objectValue)
        let order = CanonicalJSON.sortedMembers(object).compactMap { $0.value.stringValue }
        #expect(order == [
            "Carriage Return", "One", "Control", "Latin Small Letter O With Diaeresis", "Euro Sign",
            "Emoji: Grinning Face", "Hebrew Letter Dalet With Dagesh",
        ])
    }

    @Test("utf16Precedes and utf8Precedes agree with comparing the UTF-16 and UTF-8 views")
    func stringOrderMatchesViews() {
        let alphabet: [Unicode.Scalar] = [
            "\u{0}", "a", "b", "\u{7F}", "\u{80}", "é", "\u{7FF}", "\u{800}", "\u{D7FF}", "\u{E000}",
            "\u{FB33}", "\u{FFFD}", "\u{FFFF}", "\u{10000}", "😀", "\u{10FFFF}",
        ]
        var rng = JSONTestRandom(seed: 8785)
        var strings: [String] = [""]
        for _ in 0..<300 {
            var s = String.UnicodeScalarView()
            for _ in 0..<rng.next(below: 4) { s.append(alphabet[rng.next(below: alphabet.count)]) }
            strings.append(String(s))
        }
        for a in strings {
            for b in strings.prefix(60) {
                #expect(a.utf16Precedes(b) == a.utf16.lexicographicallyPrecedes(b.utf16))
                #expect(a.utf8Precedes(b) == a.utf8.lexicographicallyPrecedes(b.utf8))
            }
        }
    }

    @Test("nested objects are sorted recursively and arrays keep their order")
    func sortsRecursively() throws {
        let json = #"{"b":[{"z":1,"y":[3,1,2]},{"d":{"f":0,"e":0}}],"a":{"c":null,"b":true,"a":false}}"#
        #expect(try canonical(json)
                == #"{"a":{"a":false,"b":true,"c":null},"b":[{"y":[3,1,2],"z":1},{"d":{"e":0,"f":0}}]}"#)
    }

    @Test("whitespace and member order of the input do not change the canonical bytes")
    func ignoresLayout() throws {
        let compact = try canonical(#"{"a":[1,2],"b":{"c":"x"}}"#)
        let spaced = try canonical("{ \"b\" : { \"c\" : \"x\" } ,\n\t\"a\" : [ 1 , 2.0 ] }\r\n")
        #expect(compact == spaced)
        #expect(compact == #"{"a":[1,2],"b":{"c":"x"}}"#)
    }

    @Test("the RFC 8785 §3.2.2 example canonicalizes as published")
    func rfcExample() throws {
        let json = #"""
        {
          "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
          "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
          "literals": [null, true, false]
        }
        """#
        let expected = #"{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"#
            + #""string":"€$\u000f\nA'B\"\\\\\"/"}"#
        #expect(try canonical(json) == expected)
    }

    // MARK: Strings

    @Test("JCS string escaping: short escapes, other controls as lowercase \\u00xx, everything else as UTF-8")
    func escapesStrings() throws {
        for code in UInt8(0)..<0x20 {
            let escaped: String
            switch code {
            case 0x08: escaped = #"\b"#
            case 0x09: escaped = #"\t"#
            case 0x0A: escaped = #"\n"#
            case 0x0C: escaped = #"\f"#
            case 0x0D: escaped = #"\r"#
            default:
                let hex = String(code, radix: 16)
                escaped = #"\u00"# + (hex.count == 1 ? "0" + hex : hex)
            }
            let value = JSONValue.string(String(Unicode.Scalar(code)))
            #expect(try CanonicalJSON.string(value) == "\"\(escaped)\"", "U+00\(String(code, radix: 16))")
        }
        #expect(try CanonicalJSON.string(.string("\u{1F}\u{1B}")) == #""\u001f\u001b""#)
        #expect(try CanonicalJSON.string(.string("\"\\")) == #""\"\\""#)
        let unescaped = "/\u{7F}\u{2028}\u{2029}é€😀<>&'"
        #expect(try CanonicalJSON.encode(.string(unescaped)) == [0x22] + Array(unescaped.utf8) + [0x22])
    }

    @Test("escapes in the input are decoded first: \"mut\\u002dinsert\" becomes \"mut-insert\"")
    func decodesInputEscapes() throws {
        #expect(try canonical(#"{"op":"mut\u002dinsert","\u0061":"\/\u00e9"}"#) == #"{"a":"/é","op":"mut-insert"}"#)
    }

    @Test("member names are escaped like strings")
    func escapesMemberNames() throws {
        #expect(try canonical(#"{"a\nb":1,"\"":2}"#) == #"{"\"":2,"a\nb":1}"#)
    }

    static let noncharacters: [UInt32] = [0xFDD0, 0xFDEF, 0xFFFE, 0xFFFF, 0x1FFFE, 0x1FFFF, 0x5FFFF, 0x10FFFE, 0x10FFFF]

    @Test("noncharacters are refused in values and in member names", arguments: noncharacters)
    func refusesNoncharacters(_ codePoint: UInt32) throws {
        let scalar = try #require(Unicode.Scalar(codePoint))
        let text = String(scalar)
        let value = JSONValue.array([.string("ok" + text)])
        #expect(throws: CanonicalJSON.Failure.noncharacter) { try CanonicalJSON.encode(value) }
        let object = JSONValue.object(JSONObject([JSONMember(text, .null)]))
        #expect(throws: CanonicalJSON.Failure.noncharacter) { try CanonicalJSON.encode(object) }
        #expect(Unicode.containsNoncharacter("a" + text))
        #expect(Unicode.isNoncharacter(scalar))
        // Spelled as escapes, the parser accepts them; only canonicalization refuses them.
        let escaped = text.utf16.map { #"\u"# + String($0, radix: 16) }.joined()
        #expect(try canonicalFailure("[\"\(escaped)\"]") == .noncharacter)
    }

    @Test("the neighbours of noncharacters are ordinary characters",
          arguments: ["\u{FDCF}", "\u{FDF0}", "\u{FFFD}", "\u{1FFFD}", "\u{10000}", "\u{E000}", "\u{FEFF}"])
    func acceptsNoncharacterNeighbours(_ scalar: String) throws {
        #expect(try CanonicalJSON.encode(.string(scalar)) == [0x22] + Array(scalar.utf8) + [0x22])
        #expect(!Unicode.containsNoncharacter(scalar))
    }

    // MARK: Numbers

    @Test("numbers take the ECMAScript form of their binary64 value",
          arguments: [
            ("1.0", "1"), ("1e0", "1"), ("1E0", "1"), ("-0", "0"), ("-0.0", "0"), ("100", "100"), ("1e+2", "100"),
            ("1e21", "1e+21"), ("1e20", "100000000000000000000"), ("0.0000001", "1e-7"), ("0.000001", "0.000001"),
            ("9007199254740993", "9007199254740992"), ("123456789012345", "123456789012345"),
            ("-123456789012345", "-123456789012345"), ("1234567890123456", "1234567890123456"),
            ("1e-400", "0"), ("4.50", "4.5"), ("0.30000000000000004", "0.30000000000000004"),
          ])
    func canonicalNumbers(literal: String, expected: String) throws {
        #expect(try canonical("[\(literal)]") == "[\(expected)]")
    }

    @Test("numbers outside finite binary64 are refused",
          arguments: ["1e400", "-1e400", "1" + String(repeating: "0", count: 400)])
    func refusesNonFiniteNumbers(_ literal: String) throws {
        #expect(try canonicalFailure("{\"n\":\(literal)}") == .nonFiniteNumber)
        #expect(try #require(JSONNumber(literal: literal)).canonicalLiteral == nil)
    }

    @Test("literals are emitted as themselves and nothing else is added")
    func emitsLiterals() throws {
        #expect(try canonical(" [ null , true , false , [ ] , { } , \"\" ] ") == #"[null,true,false,[],{},""]"#)
    }

    @Test("a refused value leaves the output buffer as it was")
    func failureLeavesOutputUnchanged() {
        let noncharacter = String(Unicode.Scalar(0xFDD0 as UInt32)!)
        let value = JSONValue.object(JSONObject(["a": .string("fine"), "b": .array([.string(noncharacter)])]))
        var out = Array("kept".utf8)
        #expect(throws: CanonicalJSON.Failure.noncharacter) { try CanonicalJSON.encode(value, into: &out) }
        #expect(out == Array("kept".utf8))
        #expect(throws: CanonicalJSON.Failure.noncharacter) { try CanonicalJSON.appendString(noncharacter, to: &out) }
        #expect(out == Array("kept".utf8))
    }

    @Test("canonical output parses back to the same value")
    func roundTrips() throws {
        let json = #"{"b":"\u0000\u001f\"\\ü","a":[1.5e-7,-0.1,{"\ud83d\ude00":[]}],"c":"\u2028"}"#
        let value = try StrictJSONParser().parse(json)
        let bytes = try CanonicalJSON.encode(value)
        let reparsed = try StrictJSONParser().parse(bytes)
        #expect(try CanonicalJSON.encode(reparsed) == bytes)
        var appended: [UInt8] = Array("prefix".utf8)
        try CanonicalJSON.encode(value, into: &appended)
        #expect(appended == Array("prefix".utf8) + bytes)
    }
}

/// SplitMix64, so property tests are reproducible without shared state.
struct JSONTestRandom: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func next(below bound: Int) -> Int {
        Int(next() % UInt64(bound))
    }
}
