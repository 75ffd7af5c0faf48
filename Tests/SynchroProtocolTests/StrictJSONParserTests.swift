import Testing
@testable import SynchroProtocol

/// One input the parser must refuse, with the rule and the exact octet offset it must report.
struct RejectedJSON: Sendable, CustomTestStringConvertible {
    let label: String
    let bytes: [UInt8]
    let rule: JSONParseError.Rule
    let offset: Int

    init(_ label: String, _ bytes: [UInt8], _ rule: JSONParseError.Rule, at offset: Int) {
        self.label = label
        self.bytes = bytes
        self.rule = rule
        self.offset = offset
    }

    init(_ text: String, _ rule: JSONParseError.Rule, at offset: Int) {
        self.init(text, Array(text.utf8), rule, at: offset)
    }

    var testDescription: String { label }
}

/// Parses with the protocol limits unless the test says otherwise.
private func parse(_ text: String, limits: JSONLimits = .protocolDefault) throws(JSONParseError) -> JSONValue {
    try StrictJSONParser(limits: limits).parse(text)
}

/// The error the parser raises for `bytes`, or nil when it accepts them.
private func parseError(_ bytes: [UInt8], limits: JSONLimits = .protocolDefault) -> JSONParseError? {
    do {
        _ = try StrictJSONParser(limits: limits).parse(bytes)
        return nil
    } catch {
        return error
    }
}

private func expectRejected(_ example: RejectedJSON, sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(
        parseError(example.bytes) == JSONParseError(example.rule, at: example.offset),
        "\(example.label)", sourceLocation: sourceLocation)
}

/// `["ab` + octets + `cd"]`: an invalid sequence inside a string value starts at offset 4.
private func inString(_ octets: [UInt8]) -> [UInt8] {
    Array(#"["ab"#.utf8) + octets + Array(#"cd"]"#.utf8)
}

@Suite("Strict JSON parser")
struct StrictJSONParserTests {
    // MARK: Duplicate members

    static let duplicateMembers: [RejectedJSON] = [
        RejectedJSON(#"{"a":1,"a":2}"#, .duplicateMember, at: 7),
        RejectedJSON(#"{"a": 1, "b": 2, "a": 3}"#, .duplicateMember, at: 17),
        RejectedJSON(#"{"client_id":"x","\u0063lient_id":"y"}"#, .duplicateMember, at: 17),
        RejectedJSON(#"{"\u0063lient_id":"x","client_id":"y"}"#, .duplicateMember, at: 22),
        RejectedJSON(#"{"\u00e9":1,"é":2}"#, .duplicateMember, at: 12),
        RejectedJSON(#"{"😀":1,"\ud83d\ude00":2}"#, .duplicateMember, at: 10),
        RejectedJSON(#"{"":1,"":2}"#, .duplicateMember, at: 6),
        RejectedJSON(#"{"outer":{"b":1,"b":2}}"#, .duplicateMember, at: 16),
        RejectedJSON(#"[{"a":1},{"a":1,"a":1}]"#, .duplicateMember, at: 16),
        // The duplicate is found at its name, before its (malformed) value is read.
        RejectedJSON(#"{"a":1,"a":tru"#, .duplicateMember, at: 7),
    ]

    @Test("a repeated member name is rejected at the second occurrence, compared after unescaping",
          arguments: duplicateMembers)
    func rejectsDuplicateMembers(_ example: RejectedJSON) {
        expectRejected(example)
    }

    @Test("canonically equivalent but different names (NFC é, NFD e + U+0301) are distinct members")
    func keepsCanonicallyEquivalentNamesApart() throws {
        let raw = try parse("{\"é\":1,\"e\u{301}\":2}")
        let escaped = try parse(#"{"\u00e9":1,"e\u0301":2}"#)
        for value in [raw, escaped] {
            let object = try #require(value.objectValue)
            #expect(object.count == 2)
            #expect(object["é"] == .number(JSONNumber(1)))
            #expect(object["e\u{301}"] == .number(JSONNumber(2)))
        }
    }

    @Test("duplicates are found in objects too large for the linear scan, at every position",
          arguments: [17, 18, 40, 300])
    func rejectsDuplicatesInLargeObjects(memberCount: Int) throws {
        let names = (0..<memberCount).map { "member_\($0)" }
        for repeated in [0, 15, 16, memberCount / 2, memberCount - 1] {
            var text = "{"
            for name in names { text += "\"\(name)\":0," }
            let duplicateOffset = text.utf8.count
            // Spell the repeat with an escape so the comparison must work on unescaped octets.
            text += "\"\\u006d" + names[repeated].dropFirst() + "\":1}"
            let error = parseError(Array(text.utf8))
            #expect(error == JSONParseError(.duplicateMember, at: duplicateOffset), "repeat of \(repeated)")
        }
        var unique = "{"
        for name in names { unique += "\"\(name)\":0," }
        unique += "\"last\":1}"
        let object = try #require(try parse(unique).objectValue)
        #expect(object.keys == names + ["last"])
    }

    @Test("the same name in sibling and nested objects is not a duplicate")
    func allowsSameNameInDifferentObjects() throws {
        let value = try parse(#"[{"a":1},{"a":{"a":{"a":2}}},{"a":3}]"#)
        #expect(value.arrayValue?.count == 3)
    }

    // MARK: UTF-8

    static let invalidUTF8: [RejectedJSON] = [
        RejectedJSON("overlong 2-octet C0 80", inString([0xC0, 0x80]), .invalidUTF8, at: 4),
        RejectedJSON("overlong 2-octet C1 BF", inString([0xC1, 0xBF]), .invalidUTF8, at: 4),
        RejectedJSON("overlong 3-octet E0 80 AF", inString([0xE0, 0x80, 0xAF]), .invalidUTF8, at: 4),
        RejectedJSON("overlong 4-octet F0 80 80 AF", inString([0xF0, 0x80, 0x80, 0xAF]), .invalidUTF8, at: 4),
        RejectedJSON("encoded surrogate ED A0 80", inString([0xED, 0xA0, 0x80]), .invalidUTF8, at: 4),
        RejectedJSON("encoded surrogate ED BF BF", inString([0xED, 0xBF, 0xBF]), .invalidUTF8, at: 4),
        RejectedJSON("encoded surrogate pair", inString([0xED, 0xA0, 0xBD, 0xED, 0xB8, 0x80]), .invalidUTF8, at: 4),
        RejectedJSON("truncated 2-octet", inString([0xC3]), .invalidUTF8, at: 4),
        RejectedJSON("truncated 3-octet", inString([0xE2, 0x82]), .invalidUTF8, at: 4),
        RejectedJSON("truncated 4-octet", inString([0xF0, 0x9F, 0x98]), .invalidUTF8, at: 4),
        RejectedJSON("truncated before the closing quote", Array(#"["ab"#.utf8) + [0xE2, 0x82, 0x22, 0x5D],
                     .invalidUTF8, at: 4),
        RejectedJSON("above U+10FFFF F4 90 80 80", inString([0xF4, 0x90, 0x80, 0x80]), .invalidUTF8, at: 4),
        RejectedJSON("above U+10FFFF F5 80 80 80", inString([0xF5, 0x80, 0x80, 0x80]), .invalidUTF8, at: 4),
        RejectedJSON("octet FF", inString([0xFF]), .invalidUTF8, at: 4),
        RejectedJSON("stray continuation 80", inString([0x80]), .invalidUTF8, at: 4),
        RejectedJSON("stray continuation after a valid character", inString([0xC3, 0xA9, 0xBF]), .invalidUTF8, at: 6),
        RejectedJSON("invalid after an escape", Array(#"["\n"#.utf8) + [0xC3, 0x28, 0x22, 0x5D],
                     .invalidUTF8, at: 4),
        RejectedJSON("invalid in a member name", Array(#"{"k"#.utf8) + [0xED, 0xA0, 0x80] + Array(#"":1}"#.utf8),
                     .invalidUTF8, at: 3),
        RejectedJSON("invalid late in a long string",
                     inString(Array("0123456789abcdefghij".utf8) + [0xC0, 0xAF]), .invalidUTF8, at: 24),
        RejectedJSON("non-ASCII outside a string", [0x5B, 0xC3, 0xA9, 0x5D], .unexpectedByte, at: 1),
    ]

    @Test("invalid UTF-8 is rejected at the first octet of the broken sequence", arguments: invalidUTF8)
    func rejectsInvalidUTF8(_ example: RejectedJSON) {
        expectRejected(example)
    }

    @Test("valid multi-octet characters, including U+10FFFF and noncharacters, are kept exactly")
    func keepsValidUTF8() throws {
        // Swift literals cannot spell noncharacters such as U+FFFE and U+10FFFF.
        let noncharacters = [0xFFFE, 0x10FFFF, 0xFDD0].map { String(Unicode.Scalar($0 as UInt32)!) }
        let samples = ["é", "€", "😀", "東京", "e\u{301}", "\u{2028}"] + noncharacters
        for sample in samples {
            let value = try parse("[\"\(sample)\"]")
            #expect(value.arrayValue?.first?.stringValue?.exactlyEquals(sample) == true, "\(sample)")
        }
    }

    // MARK: Escapes and surrogates

    static let surrogateEscapes: [RejectedJSON] = [
        RejectedJSON(#"["\ud800"]"#, .loneSurrogate, at: 2),
        RejectedJSON(#"["\udbff"]"#, .loneSurrogate, at: 2),
        RejectedJSON(#"["\udc00"]"#, .loneSurrogate, at: 2),
        RejectedJSON(#"["ab\uDFFF"]"#, .loneSurrogate, at: 4),
        RejectedJSON(#"["\ud800\u0041"]"#, .loneSurrogate, at: 2),
        RejectedJSON(#"["\ud800\ud800\udc00"]"#, .loneSurrogate, at: 2),
        RejectedJSON(#"["\ud800x"]"#, .loneSurrogate, at: 2),
        RejectedJSON(#"["\ud800\n"]"#, .loneSurrogate, at: 2),
        RejectedJSON(#"["\udc00\ud800"]"#, .loneSurrogate, at: 2),
        RejectedJSON(#"{"\ud800":1}"#, .loneSurrogate, at: 2),
    ]

    @Test("lone surrogate escapes are rejected at the escape", arguments: surrogateEscapes)
    func rejectsLoneSurrogates(_ example: RejectedJSON) {
        expectRejected(example)
    }

    static let invalidEscapes: [RejectedJSON] = [
        RejectedJSON(#"["\x"]"#, .invalidEscape, at: 2),
        RejectedJSON(#"["\'"]"#, .invalidEscape, at: 2),
        RejectedJSON(#"["ab\U0041"]"#, .invalidEscape, at: 4),
        RejectedJSON(#"["\ "]"#, .invalidEscape, at: 2),
        RejectedJSON(#"["\0"]"#, .invalidEscape, at: 2),
        RejectedJSON(#"["\u12G4"]"#, .invalidEscape, at: 6),
        RejectedJSON(#"["\u00"]"#, .invalidEscape, at: 6),
        RejectedJSON(#"["\ud83d\ude0x"]"#, .invalidEscape, at: 13),
        RejectedJSON(#"["\u00e"#, .unexpectedEnd, at: 7),
        RejectedJSON(#"["\"#, .unexpectedEnd, at: 3),
    ]

    @Test("unknown escapes and malformed \\u escapes are rejected", arguments: invalidEscapes)
    func rejectsInvalidEscapes(_ example: RejectedJSON) {
        expectRejected(example)
    }

    @Test("every RFC 8259 escape decodes, surrogate pairs join, and hex digits take either case")
    func decodesEscapes() throws {
        let value = try parse(
            #"["\"\\\/\b\f\n\r\t", "\u0000\u001f\u00E9\u20ac", "\ud83d\ude00\uD83D\uDE00", "mut\u002dinsert"]"#)
        let strings = try #require(value.arrayValue).compactMap(\.stringValue)
        #expect(strings.count == 4)
        #expect(strings[0].exactlyEquals("\"\\/\u{8}\u{C}\n\r\t"))
        #expect(strings[1].exactlyEquals("\u{0}\u{1F}é€"))
        #expect(strings[2].exactlyEquals("😀😀"))
        #expect(strings[3].exactlyEquals("mut-insert"))
    }

    @Test("escapes and specials are found at every position of a long string (word-at-a-time scan)")
    func scansEveryPosition() throws {
        for length in 0..<40 {
            let prefix = String(repeating: "a", count: length)
            let decoded = try parse("[\"\(prefix)\\n\(prefix)é\(prefix)\"]").arrayValue?.first?.stringValue
            #expect(decoded?.exactlyEquals("\(prefix)\n\(prefix)é\(prefix)") == true, "length \(length)")

            let plain = try parse("[\"\(prefix)\"]").arrayValue?.first?.stringValue
            #expect(plain?.exactlyEquals(prefix) == true)

            let control = Array("[\"\(prefix)".utf8) + [0x1F] + Array("\(prefix)\"]".utf8)
            #expect(parseError(control) == JSONParseError(.controlCharacterInString, at: 2 + length))

            let broken = Array("[\"\(prefix)".utf8) + [0xC3] + Array("\(prefix)\"]".utf8)
            #expect(parseError(broken) == JSONParseError(.invalidUTF8, at: 2 + length))

            let unterminated = Array("[\"\(prefix)".utf8)
            #expect(parseError(unterminated) == JSONParseError(.unexpectedEnd, at: 2 + length))
        }
    }

    static let controlCharacters: [RejectedJSON] = [
        RejectedJSON("NUL", Array(#"["a"#.utf8) + [0x00] + Array(#""]"#.utf8), .controlCharacterInString, at: 3),
        RejectedJSON("raw tab", Array(#"["a"#.utf8) + [0x09] + Array(#""]"#.utf8), .controlCharacterInString, at: 3),
        RejectedJSON("raw line feed", Array(#"["a"#.utf8) + [0x0A] + Array(#""]"#.utf8),
                     .controlCharacterInString, at: 3),
        RejectedJSON("U+001F", Array(#"["a"#.utf8) + [0x1F] + Array(#""]"#.utf8), .controlCharacterInString, at: 3),
        RejectedJSON("after an escape", Array(#"["\t"#.utf8) + [0x0D] + Array(#""]"#.utf8),
                     .controlCharacterInString, at: 4),
        RejectedJSON("in a member name", Array(#"{"a"#.utf8) + [0x01] + Array(#"":1}"#.utf8),
                     .controlCharacterInString, at: 3),
    ]

    @Test("raw control characters (U+0000–U+001F) in strings are rejected", arguments: controlCharacters)
    func rejectsControlCharacters(_ example: RejectedJSON) {
        expectRejected(example)
    }

    @Test("DEL (U+007F) is not a control character for JSON and is accepted raw")
    func acceptsDelete() throws {
        #expect(try parse("[\"a\u{7F}b\"]").arrayValue?.first?.stringValue == "a\u{7F}b")
    }

    // MARK: Document framing

    static let framing: [RejectedJSON] = [
        RejectedJSON("byte order mark", [0xEF, 0xBB, 0xBF] + Array("{}".utf8), .unexpectedByte, at: 0),
        RejectedJSON("empty document", [], .unexpectedEnd, at: 0),
        RejectedJSON("whitespace only", Array(" \n\t ".utf8), .unexpectedEnd, at: 4),
        RejectedJSON("{} x", .trailingContent, at: 3),
        RejectedJSON("{}{}", .trailingContent, at: 2),
        RejectedJSON("1 2", .trailingContent, at: 2),
        RejectedJSON(#""a""b""#, .trailingContent, at: 3),
        RejectedJSON("[] ]", .trailingContent, at: 3),
        RejectedJSON("nullx", .trailingContent, at: 4),
        RejectedJSON("0x10", .trailingContent, at: 1),
        RejectedJSON("trailing NUL", Array("{}".utf8) + [0x00], .trailingContent, at: 2),
        RejectedJSON("form feed is not whitespace", Array("{}".utf8) + [0x0C], .trailingContent, at: 2),
        RejectedJSON("non-breaking space is not whitespace", [0xC2, 0xA0] + Array("1".utf8), .unexpectedByte, at: 0),
        RejectedJSON("{\"a\":", .unexpectedEnd, at: 5),
        RejectedJSON("[1,", .unexpectedEnd, at: 3),
        RejectedJSON("{\"a\"", .unexpectedEnd, at: 4),
        RejectedJSON("{\"a", .unexpectedEnd, at: 3),
        RejectedJSON("[1 2]", .unexpectedByte, at: 3),
        RejectedJSON("{\"a\" 1}", .unexpectedByte, at: 5),
        RejectedJSON("{,}", .unexpectedByte, at: 1),
        RejectedJSON("[,]", .unexpectedByte, at: 1),
        RejectedJSON("[1,]", .unexpectedByte, at: 3),
        RejectedJSON("{\"a\":1,}", .unexpectedByte, at: 7),
        RejectedJSON("{1:2}", .unexpectedByte, at: 1),
        RejectedJSON("{'a':1}", .unexpectedByte, at: 1),
        RejectedJSON("[1}", .unexpectedByte, at: 2),
        RejectedJSON("tru", .unexpectedEnd, at: 3),
        RejectedJSON("trUe", .unexpectedByte, at: 2),
        RejectedJSON("True", .unexpectedByte, at: 0),
        RejectedJSON("nul", .unexpectedEnd, at: 3),
        RejectedJSON("[undefined]", .unexpectedByte, at: 1),
    ]

    @Test("exactly one value: BOM, trailing content, a second value and broken structure are rejected",
          arguments: framing)
    func rejectsBadFraming(_ example: RejectedJSON) {
        expectRejected(example)
    }

    @Test("the four JSON whitespace octets are allowed around and between tokens")
    func acceptsWhitespace() throws {
        let value = try parse(" \t\r\n{ \"a\" :\n[ 1 ,\ttrue , null ] }\r\n ")
        #expect(value == .object(JSONObject(["a": .array([.number(JSONNumber(1)), .bool(true), .null])])))
    }

    @Test("scalars are valid documents on their own")
    func acceptsTopLevelScalars() throws {
        #expect(try parse("null") == .null)
        #expect(try parse(" true ") == .bool(true))
        #expect(try parse("false") == .bool(false))
        #expect(try parse("\"x\"") == .string("x"))
        #expect(try parse("-0.5e-3") == .number(try #require(JSONNumber(literal: "-0.5e-3"))))
    }

    // MARK: Numbers

    static let invalidNumbers: [RejectedJSON] = [
        RejectedJSON("01", .invalidNumber, at: 1),
        RejectedJSON("00", .invalidNumber, at: 1),
        RejectedJSON("-01", .invalidNumber, at: 2),
        RejectedJSON("1.", .invalidNumber, at: 2),
        RejectedJSON("1.e5", .invalidNumber, at: 2),
        RejectedJSON(".1", .invalidNumber, at: 0),
        RejectedJSON("-.5", .invalidNumber, at: 1),
        RejectedJSON("+1", .invalidNumber, at: 0),
        RejectedJSON("-", .invalidNumber, at: 1),
        RejectedJSON("- 1", .invalidNumber, at: 1),
        RejectedJSON("1e", .invalidNumber, at: 2),
        RejectedJSON("1e+", .invalidNumber, at: 3),
        RejectedJSON("1E-", .invalidNumber, at: 3),
        RejectedJSON("1e+-1", .invalidNumber, at: 3),
        RejectedJSON("NaN", .unexpectedByte, at: 0),
        RejectedJSON("Infinity", .unexpectedByte, at: 0),
        RejectedJSON("-Infinity", .invalidNumber, at: 1),
        RejectedJSON("[01]", .invalidNumber, at: 2),
        RejectedJSON("{\"a\":1.}", .invalidNumber, at: 7),
    ]

    @Test("every malformed number form is rejected", arguments: invalidNumbers)
    func rejectsInvalidNumbers(_ example: RejectedJSON) {
        expectRejected(example)
    }

    @Test("numbers keep their exact text: 1, 1.0, 1e0 and 1E0 stay distinguishable")
    func keepsNumberText() throws {
        let literals = ["1", "1.0", "1e0", "1E0", "-0", "0.10", "1E+2", "12345678901234567890123", "1e400"]
        let value = try parse("[" + literals.joined(separator: ",") + "]")
        let numbers = try #require(value.arrayValue).compactMap(\.numberValue)
        #expect(numbers.map(\.literal) == literals)
        #expect(Set(numbers).count == literals.count)
        #expect(numbers[0] != numbers[1])
    }

    @Test("exactInt64 holds Int64.min and Int64.max exactly and is nil beyond or for non-integer forms",
          arguments: [
            ("9223372036854775807", Int64.max), ("-9223372036854775808", Int64.min), ("0", 0), ("-0", 0),
            ("9007199254740993", 9_007_199_254_740_993), ("9223372036854775808", nil),
            ("-9223372036854775809", nil), ("1.0", nil), ("1e0", nil), ("100000000000000000000", nil),
          ] as [(String, Int64?)])
    func exactInt64(literal: String, expected: Int64?) throws {
        let number = try #require(try parse(literal).numberValue)
        #expect(number.exactInt64 == expected)
        #expect(number.isNegativeZeroLiteral == (literal == "-0"))
    }

    @Test("the number grammar of JSONNumber(literal:) matches the parser's")
    func numberLiteralGrammar() {
        for valid in ["0", "-0", "1", "-12", "1.5", "1e5", "1E+5", "1e-05", "0.0", "123.456e789"] {
            #expect(JSONNumber(literal: valid)?.literal == valid)
        }
        for invalid in ["", "-", "01", "1.", ".1", "+1", "1e", "1e+", " 1", "1 ", "NaN", "0x1", "1_000"] {
            #expect(JSONNumber(literal: invalid) == nil, "\(invalid)")
        }
    }

    // MARK: Limits

    @Test("a value budget counts every value at any depth and stops the parse at the first one past it")
    func boundsValueCount() throws {
        // `[0,0,0]` is four values (the array and three numbers); `{"a":[1]}` three (names are not values).
        #expect(try parse("[0,0,0]", limits: JSONLimits(maxValues: 4)).arrayValue?.count == 3)
        #expect(parseError(Array("[0,0,0]".utf8), limits: JSONLimits(maxValues: 3))
                == JSONParseError(.valueLimitExceeded, at: 5))
        #expect(try parse(#"{"a":[1]}"#, limits: JSONLimits(maxValues: 3)).objectValue != nil)
        #expect(parseError(Array(#"{"a":[1]}"#.utf8), limits: JSONLimits(maxValues: 2))
                == JSONParseError(.valueLimitExceeded, at: 6))
        // A wide body: two octets per value. The parse stops at the budget, long before the end.
        let wide = Array(("[" + String(repeating: "0,", count: 1_000_000) + "0]").utf8)
        #expect(parseError(wide, limits: JSONLimits(maxValues: 1000))
                == JSONParseError(.valueLimitExceeded, at: 1999))
        #expect(try StrictJSONParser().parse(wide).arrayValue?.count == 1_000_001)
    }

    @Test("nesting up to maxDepth is accepted; the container at maxDepth + 1 is rejected at its bracket")
    func boundsDepth() throws {
        for maxDepth in [1, 4, 128] {
            let limits = JSONLimits(maxDepth: maxDepth)
            let deepest = String(repeating: "[", count: maxDepth) + "1" + String(repeating: "]", count: maxDepth)
            #expect(try parse(deepest, limits: limits).arrayValue != nil)
            let tooDeep = "[" + deepest + "]"
            #expect(parseError(Array(tooDeep.utf8), limits: limits)
                    == JSONParseError(.depthLimitExceeded, at: maxDepth))
        }
        let objects = #"{"a":{"a":{"a":{"a":{}}}}}"#
        #expect(parseError(Array(objects.utf8), limits: JSONLimits(maxDepth: 4))
                == JSONParseError(.depthLimitExceeded, at: 20))
        #expect(try parse(objects, limits: JSONLimits(maxDepth: 5)).objectValue != nil)
        #expect(try parse("1", limits: JSONLimits(maxDepth: 0)) == .number(JSONNumber(1)))
        #expect(parseError(Array("[]".utf8), limits: JSONLimits(maxDepth: 0))
                == JSONParseError(.depthLimitExceeded, at: 0))
    }

    @Test("the default depth limit is the protocol's 128 and siblings do not add up")
    func defaultDepth() throws {
        let wide = "[" + Array(repeating: "[[]]", count: 200).joined(separator: ",") + "]"
        #expect(try parse(wide).arrayValue?.count == 200)
        let tooDeep = String(repeating: "[", count: 129) + String(repeating: "]", count: 129)
        #expect(parseError(Array(tooDeep.utf8)) == JSONParseError(.depthLimitExceeded, at: 128))
    }

    @Test("a document of exactly maxBytes is accepted; one octet more is rejected before parsing")
    func boundsSize() throws {
        let limits = JSONLimits(maxBytes: 10)
        #expect(try parse(#"["abcdef"]"#, limits: limits).arrayValue?.count == 1)
        // Rejected for size even though the content is also malformed: nothing is read.
        #expect(parseError(Array(#"["abcdefg"#.utf8) + [0xFF, 0x00], limits: limits)
                == JSONParseError(.sizeLimitExceeded, at: 10))
    }

    // MARK: Structure and API

    @Test("members keep their received order and are found by exact name")
    func keepsMemberOrder() throws {
        let object = try #require(try parse(#"{"z":1,"a":2,"m":{"y":null,"b":[]}}"#).objectValue)
        #expect(object.keys == ["z", "a", "m"])
        #expect(object["m"]?.objectValue?.keys == ["y", "b"])
        #expect(object["missing"] == nil)
    }

    @Test("a JSON document inside a string parses after unescaping")
    func parsesEmbeddedJSON() throws {
        let outer = try parse(#"{"batch_json":"{\"client_id\":\"c\",\"n\":[1,2.5]}"}"#)
        let inner = try #require(outer.objectValue?["batch_json"]?.stringValue)
        let object = try #require(try parse(inner).objectValue)
        #expect(object.keys == ["client_id", "n"])
    }

    @Test("slices and non-contiguous collections parse, with offsets relative to the collection")
    func parsesCollections() throws {
        let bytes = Array("xx[1,2]".utf8)
        #expect(try StrictJSONParser().parse(bytes[2...]).arrayValue?.count == 2)
        #expect(try StrictJSONParser().parse(bytes.dropFirst(2).lazy.map { $0 }).arrayValue?.count == 2)
        #expect(throws: JSONParseError(.unexpectedByte, at: 3)) {
            try StrictJSONParser().parse(Array("xx[1 2]".utf8)[2...])
        }
    }

    @Test("the error description names the rule and offset but never the input")
    func errorDescriptionIsPrivate() {
        let secret = "Bearer-s3cr3t"
        let error = parseError(Array("{\"\(secret)\":1,\"\(secret)\":2}".utf8))
        #expect(error?.description == "invalid JSON: duplicate_member at byte 19")
        #expect(error?.description.contains(secret) == false)
    }
}
