import SynchroProtocol
import Testing

@Suite("Portable values (spec/integrity.md §1)")
struct PortableValueTests {
    /// Typed octets for a field spec JSON and a wire JSON text.
    private func typed(_ spec: String, _ wire: String) throws -> [UInt8] {
        let fieldSpec = try FieldSpec(json: IntegrityFixtures.json(spec))
        return try PortableValue.typedBytes(IntegrityFixtures.json(wire), spec: fieldSpec)
    }

    /// The rule a value breaks, or nil when it is valid.
    private func failure(_ spec: String, _ wire: String) throws -> PortableValueError? {
        let fieldSpec = try FieldSpec(json: IntegrityFixtures.json(spec))
        let value = try IntegrityFixtures.json(wire)
        do throws(PortableValueError) {
            _ = try PortableValue.typedBytes(value, spec: fieldSpec)
            return nil
        } catch {
            return error
        }
    }

    // MARK: Worked examples

    @Test("the typed octets of integrity §8.2 are reproduced", arguments: [
        (#"{"type":"int","nullable":false}"#, "42", "02010000002a"),
        (#"{"type":"int64","nullable":false}"#, #""-2""#, "0301fffffffffffffffe"),
        (#"{"type":"decimal","nullable":false,"precision":5,"scale":3}"#, #""-0.05""#,
         "040100000000000000052d302e3035"),
        (#"{"type":"float","nullable":false}"#, "2.5", "05014004000000000000"),
        (#"{"type":"boolean","nullable":false}"#, "true", "060101"),
        (#"{"type":"string","nullable":false}"#, "\"H\u{E9}\"", "0101000000000000000348c3a9"),
        (#"{"type":"bytes","nullable":false}"#, #""AQID""#, "0b010000000000000003010203"),
        (#"{"type":"json","nullable":false}"#, #""[1,\"a\"]""#, "0a0100000000000000075b312c2261225d"),
        (#"{"type":"date","nullable":true}"#, "null", "0800"),
        (#"{"type":"time","nullable":false}"#, #""08:30:00.000000""#,
         "0901000000000000000f30383a33303a30302e303030303030"),
    ])
    func workedExamples(spec: String, wire: String, hex: String) throws {
        #expect(Hex.encode(try typed(spec, wire)) == hex)
    }

    @Test("the typed-value octets quoted in wire-protocol §2.10.4 are reproduced", arguments: [
        (#"{"type":"boolean","nullable":true}"#, "null", "0600"),
        (#"{"type":"string","nullable":true}"#, #""""#, "01010000000000000000"),
        (#"{"type":"string","nullable":true}"#, "\"\u{E9}\"", "01010000000000000002c3a9"),
        (#"{"type":"string","nullable":true}"#, #""e\u0301""#, "0101000000000000000365cc81"),
        (#"{"type":"time","nullable":true}"#, #""23:59:59.999999""#,
         "0901000000000000000f32333a35393a35392e393939393939"),
    ])
    func upstreamTypedValues(spec: String, wire: String, hex: String) throws {
        #expect(Hex.encode(try typed(spec, wire)) == hex)
    }

    // MARK: Valid forms of every type

    @Test("canonical values of every type encode to tag, presence 01 and payload", arguments: [
        (#"{"type":"int","nullable":false}"#, "0", "020100000000"),
        (#"{"type":"int","nullable":false}"#, "2147483647", "02017fffffff"),
        (#"{"type":"int","nullable":false}"#, "-2147483648", "020180000000"),
        (#"{"type":"int64","nullable":false}"#, #""0""#, "03010000000000000000"),
        (#"{"type":"int64","nullable":false}"#, #""9223372036854775807""#, "03017fffffffffffffff"),
        (#"{"type":"int64","nullable":false}"#, #""-9223372036854775808""#, "03018000000000000000"),
        (#"{"type":"int64","nullable":false}"#, #""9007199254740991""#, "0301001fffffffffffff"),
        (#"{"type":"decimal","nullable":false,"precision":6,"scale":2}"#, #""0""#, "0401000000000000000130"),
        (#"{"type":"decimal","nullable":false,"precision":6,"scale":2}"#, #""12.34""#,
         "0401000000000000000531322e3334"),
        (#"{"type":"decimal","nullable":false,"precision":6,"scale":2}"#, #""1.5""#, "04010000000000000003312e35"),
        (#"{"type":"decimal","nullable":false,"precision":6,"scale":2}"#, #""-0.5""#,
         "040100000000000000042d302e35"),
        (#"{"type":"decimal","nullable":false,"precision":6,"scale":2}"#, #""9999.99""#,
         "04010000000000000007393939392e3939"),
        (#"{"type":"decimal","nullable":false,"precision":3,"scale":0}"#, #""-999""#,
         "040100000000000000042d393939"),
        (#"{"type":"float","nullable":false}"#, "0.1", "05013fb999999999999a"),
        (#"{"type":"float","nullable":false}"#, "0", "05010000000000000000"),
        (#"{"type":"float","nullable":false}"#, "100", "05014059000000000000"),
        (#"{"type":"float","nullable":false}"#, "1e+21", "0501444b1ae4d6e2ef50"),
        (#"{"type":"float","nullable":false}"#, "5e-324", "05010000000000000001"),
        (#"{"type":"float","nullable":false}"#, "1.7976931348623157e+308", "05017fefffffffffffff"),
        (#"{"type":"float","nullable":false}"#, "-1.5e-7", "0501be8421f5f40d8376"),
        (#"{"type":"float","nullable":false}"#, "0.000001", "05013eb0c6f7a0b5ed8d"),
        (#"{"type":"float","nullable":false}"#, "123.456", "0501405edd2f1a9fbe77"),
        (#"{"type":"boolean","nullable":false}"#, "false", "060100"),
        (#"{"type":"datetime","nullable":false}"#, #""2024-02-29T12:34:56.123456Z""#,
         "0701000000000000001b323032342d30322d32395431323a33343a35362e3132333435365a"),
        (#"{"type":"date","nullable":false}"#, #""2024-02-29""#, "0801000000000000000a323032342d30322d3239"),
        (#"{"type":"time","nullable":false}"#, #""00:00:00.000000""#,
         "0901000000000000000f30303a30303a30302e303030303030"),
        (#"{"type":"json","nullable":false}"#, #""null""#, "0a0100000000000000046e756c6c"),
        (#"{"type":"json","nullable":false}"#, #""\"\"""#, "0a0100000000000000022222"),
        (#"{"type":"json","nullable":false}"#, #""{\"a\":1,\"z\":[true,null]}""#,
         "0a0100000000000000177b2261223a312c227a223a5b747275652c6e756c6c5d7d"),
        (#"{"type":"bytes","nullable":false}"#, #""""#, "0b010000000000000000"),
        (#"{"type":"bytes","nullable":false}"#, #""AP8""#, "0b01000000000000000200ff"),
        (#"{"type":"bytes","nullable":false}"#, #""3q2-7w""#, "0b010000000000000004deadbeef"),
        (#"{"type":"string","nullable":false}"#, "\"\u{20AC}\"", "01010000000000000003e282ac"),
    ])
    func validValues(spec: String, wire: String, hex: String) throws {
        #expect(Hex.encode(try typed(spec, wire)) == hex)
    }

    @Test("null of a nullable field of each type is tag followed by 00", arguments: PortableType.allCases)
    func nullIsTagAndZero(type: PortableType) throws {
        let spec = type == .decimal
            ? try FieldSpec(type: type, nullable: true, precision: 6, scale: 2)
            : try FieldSpec(type: type, nullable: true)
        #expect(try PortableValue.typedBytes(.null, spec: spec) == [type.tag, 0x00])
    }

    // MARK: Invalid forms

    @Test("non-canonical values are rejected for the rule they break", arguments: [
        // int
        (#"{"type":"int","nullable":true}"#, "1.0", PortableValueError.intNotCanonical),
        (#"{"type":"int","nullable":true}"#, "1e0", .intNotCanonical),
        (#"{"type":"int","nullable":true}"#, "-0", .intNotCanonical),
        (#"{"type":"int","nullable":true}"#, "2147483648", .intOutOfRange),
        (#"{"type":"int","nullable":true}"#, "-2147483649", .intOutOfRange),
        (#"{"type":"int","nullable":true}"#, "99999999999999999999999", .intOutOfRange),
        (#"{"type":"int","nullable":true}"#, #""1""#, .typeMismatch(expected: .int, found: "string")),
        // int64
        (#"{"type":"int64","nullable":true}"#, "1", .typeMismatch(expected: .int64, found: "number")),
        (#"{"type":"int64","nullable":true}"#, #""01""#, .int64NotCanonical),
        (#"{"type":"int64","nullable":true}"#, #""+1""#, .int64NotCanonical),
        (#"{"type":"int64","nullable":true}"#, #""-0""#, .int64NotCanonical),
        (#"{"type":"int64","nullable":true}"#, #""""#, .int64NotCanonical),
        (#"{"type":"int64","nullable":true}"#, #""-""#, .int64NotCanonical),
        (#"{"type":"int64","nullable":true}"#, #""1.0""#, .int64NotCanonical),
        (#"{"type":"int64","nullable":true}"#, #"" 1""#, .int64NotCanonical),
        (#"{"type":"int64","nullable":true}"#, #""9223372036854775808""#, .int64OutOfRange),
        (#"{"type":"int64","nullable":true}"#, #""-9223372036854775809""#, .int64OutOfRange),
        // decimal
        (#"{"type":"decimal","nullable":false,"precision":6,"scale":2}"#, #""1e2""#, .decimalNotCanonical),
        (#"{"type":"decimal","nullable":false,"precision":6,"scale":2}"#, #""-0""#, .decimalNotCanonical),
        (#"{"type":"decimal","nullable":false,"precision":6,"scale":2}"#, #""+1""#, .decimalNotCanonical),
        (#"{"type":"decimal","nullable":false,"precision":6,"scale":2}"#, #""1.230""#, .decimalNotCanonical),
        (#"{"type":"decimal","nullable":false,"precision":6,"scale":2}"#, #""1.""#, .decimalNotCanonical),
        (#"{"type":"decimal","nullable":false,"precision":6,"scale":2}"#, #"".5""#, .decimalNotCanonical),
        (#"{"type":"decimal","nullable":false,"precision":6,"scale":2}"#, #""01""#, .decimalNotCanonical),
        (#"{"type":"decimal","nullable":false,"precision":6,"scale":2}"#, #""00.5""#, .decimalNotCanonical),
        (#"{"type":"decimal","nullable":false,"precision":6,"scale":2}"#, #""0.0""#, .decimalNotCanonical),
        (#"{"type":"decimal","nullable":false,"precision":6,"scale":2}"#, #""-0.0""#, .decimalNotCanonical),
        (#"{"type":"decimal","nullable":false,"precision":6,"scale":2}"#, #""7.00""#, .decimalNotCanonical),
        (#"{"type":"decimal","nullable":false,"precision":6,"scale":2}"#, #""""#, .decimalNotCanonical),
        (#"{"type":"decimal","nullable":false,"precision":6,"scale":2}"#, "1.5",
         .typeMismatch(expected: .decimal, found: "number")),
        (#"{"type":"decimal","nullable":false,"precision":6,"scale":2}"#, #""12345.67""#,
         .decimalPrecisionExceeded),
        (#"{"type":"decimal","nullable":false,"precision":6,"scale":2}"#, #""10000""#, .decimalPrecisionExceeded),
        (#"{"type":"decimal","nullable":false,"precision":6,"scale":2}"#, #""1.234""#, .decimalScaleExceeded),
        (#"{"type":"decimal","nullable":false,"precision":3,"scale":0}"#, #""0.5""#, .decimalScaleExceeded),
        // float
        (#"{"type":"float","nullable":true}"#, "1.0", .floatNotCanonical),
        (#"{"type":"float","nullable":true}"#, "1E21", .floatNotCanonical),
        (#"{"type":"float","nullable":true}"#, "1e21", .floatNotCanonical),
        (#"{"type":"float","nullable":true}"#, "100000000000000000000000", .floatNotCanonical),
        (#"{"type":"float","nullable":true}"#, "0.10", .floatNotCanonical),
        (#"{"type":"float","nullable":true}"#, "9007199254740993", .floatNotCanonical),
        (#"{"type":"float","nullable":true}"#, "1e-400", .floatNotCanonical),
        (#"{"type":"float","nullable":true}"#, "-0", .floatNegativeZero),
        (#"{"type":"float","nullable":true}"#, "-0.0", .floatNegativeZero),
        (#"{"type":"float","nullable":true}"#, "1e400", .floatNotFinite),
        (#"{"type":"float","nullable":true}"#, "-1e400", .floatNotFinite),
        (#"{"type":"float","nullable":true}"#, #""NaN""#, .typeMismatch(expected: .float, found: "string")),
        // boolean
        (#"{"type":"boolean","nullable":true}"#, "1", .typeMismatch(expected: .boolean, found: "number")),
        (#"{"type":"boolean","nullable":true}"#, #""true""#, .typeMismatch(expected: .boolean, found: "string")),
        // datetime
        (#"{"type":"datetime","nullable":true}"#, #""2024-02-29T12:34:56.123456+00:00""#, .datetimeInvalid),
        (#"{"type":"datetime","nullable":true}"#, #""2024-12-31T23:59:60.000000Z""#, .datetimeInvalid),
        (#"{"type":"datetime","nullable":true}"#, #""2024-02-29T12:34:56Z""#, .datetimeInvalid),
        (#"{"type":"datetime","nullable":true}"#, #""2024-02-29T12:34:56.123Z""#, .datetimeInvalid),
        (#"{"type":"datetime","nullable":true}"#, #""2024-02-29 12:34:56.123456Z""#, .datetimeInvalid),
        (#"{"type":"datetime","nullable":true}"#, #""2023-02-29T12:34:56.123456Z""#, .datetimeInvalid),
        (#"{"type":"datetime","nullable":true}"#, #""2024-02-29t12:34:56.123456z""#, .datetimeInvalid),
        // date
        (#"{"type":"date","nullable":true}"#, #""2023-02-29""#, .dateInvalid),
        (#"{"type":"date","nullable":true}"#, #""1900-02-29""#, .dateInvalid),
        (#"{"type":"date","nullable":true}"#, #""2024-13-01""#, .dateInvalid),
        (#"{"type":"date","nullable":true}"#, #""2024-1-01""#, .dateInvalid),
        (#"{"type":"date","nullable":true}"#, #""2024-04-31""#, .dateInvalid),
        (#"{"type":"date","nullable":true}"#, #""2024-00-10""#, .dateInvalid),
        // time
        (#"{"type":"time","nullable":true}"#, #""23:59:60.000000""#, .timeInvalid),
        (#"{"type":"time","nullable":true}"#, #""12:34:56.12345""#, .timeInvalid),
        (#"{"type":"time","nullable":true}"#, #""12:34:56.123456Z""#, .timeInvalid),
        (#"{"type":"time","nullable":true}"#, #""24:00:00.000000""#, .timeInvalid),
        (#"{"type":"time","nullable":true}"#, #""12:60:00.000000""#, .timeInvalid),
        // json
        (#"{"type":"json","nullable":true}"#, #""{\"a\":1,\"a\":2}""#, .jsonDuplicateMember),
        (#"{"type":"json","nullable":true}"#, #""{\"a\":""#, .jsonMalformed),
        (#"{"type":"json","nullable":true}"#, #""""#, .jsonMalformed),
        (#"{"type":"json","nullable":true}"#, #""1 2""#, .jsonMalformed),
        (#"{"type":"json","nullable":true}"#, #""[\"\\ud800\"]""#, .jsonMalformed),
        (#"{"type":"json","nullable":true}"#, #""{\"z\":1,\"a\":2}""#, .jsonNotCanonical),
        (#"{"type":"json","nullable":true}"#, #""{\"a\": 1}""#, .jsonNotCanonical),
        (#"{"type":"json","nullable":true}"#, #"" null""#, .jsonNotCanonical),
        (#"{"type":"json","nullable":true}"#, #""1.0""#, .jsonNotCanonical),
        (#"{"type":"json","nullable":true}"#, #""\"\\u0041\"""#, .jsonNotCanonical),
        (#"{"type":"json","nullable":true}"#, #""{\"n\":9007199254740992}""#, .jsonUnsafeInteger),
        (#"{"type":"json","nullable":true}"#, #""[-9007199254740992]""#, .jsonUnsafeInteger),
        (#"{"type":"json","nullable":true}"#, #""1e+21""#, .jsonUnsafeInteger),
        (#"{"type":"json","nullable":true}"#, #""[1e400]""#, .jsonNonFiniteNumber),
        (#"{"type":"json","nullable":true}"#, #""[\"\uFDD0\"]""#, .jsonNoncharacter),
        (#"{"type":"json","nullable":true}"#, #""{\"\uFFFF\":1}""#, .jsonNoncharacter),
        (#"{"type":"json","nullable":true}"#, "{}", .typeMismatch(expected: .json, found: "object")),
        // bytes
        (#"{"type":"bytes","nullable":true}"#, #""AQ==""#, .bytesNotCanonical),
        (#"{"type":"bytes","nullable":true}"#, #""+/8""#, .bytesNotCanonical),
        (#"{"type":"bytes","nullable":true}"#, #""AR""#, .bytesNotCanonical),
        (#"{"type":"bytes","nullable":true}"#, #""A""#, .bytesNotCanonical),
        (#"{"type":"bytes","nullable":true}"#, #""AP8 ""#, .bytesNotCanonical),
        // string
        (#"{"type":"string","nullable":true}"#, #""a\uFDD0""#, .stringNoncharacter),
        (#"{"type":"string","nullable":true}"#, #""\uFFFE""#, .stringNoncharacter),
        (#"{"type":"string","nullable":true}"#, #""\uDBFF\uDFFF""#, .stringNoncharacter),
        (#"{"type":"string","nullable":true}"#, #""\uD83F\uDFFE""#, .stringNoncharacter),
        (#"{"type":"string","nullable":true}"#, "7", .typeMismatch(expected: .string, found: "number")),
        // null
        (#"{"type":"string","nullable":false}"#, "null", .nullNotAllowed),
        (#"{"type":"decimal","nullable":false,"precision":6,"scale":2}"#, "null", .nullNotAllowed),
    ])
    func invalidValues(spec: String, wire: String, expected: PortableValueError) throws {
        #expect(try failure(spec, wire) == expected)
    }
    @Test("a canonically equivalent but different string encodes differently (no normalization)")
    func noNormalization() throws {
        let spec = try FieldSpec(type: .string, nullable: false)
        let nfc = try PortableValue.typedBytes(.string("\u{E9}"), spec: spec)
        let nfd = try PortableValue.typedBytes(.string("e\u{301}"), spec: spec)
        #expect(nfc != nfd)
    }

    @Test("append writes nothing when the value is invalid, and exactly the typed octets otherwise")
    func appendLeavesWriterUntouchedOnFailure() throws {
        let spec = try FieldSpec(type: .int, nullable: false)
        var writer = OctetWriter()
        writer.append(0xAA)
        #expect(throws: PortableValueError.nullNotAllowed) {
            try PortableValue.append(.null, spec: spec, into: &writer)
        }
        #expect(writer.bytes == [0xAA])
        try PortableValue.append(.number(JSONNumber(7)), spec: spec, into: &writer)
        #expect(writer.bytes == [0xAA, 0x02, 0x01, 0x00, 0x00, 0x00, 0x07])
    }

    @Test("error descriptions never contain the rejected value", arguments: [
        (#"{"type":"int","nullable":false}"#, "98765432109"),
        (#"{"type":"int64","nullable":false}"#, #""0098765432""#),
        (#"{"type":"decimal","nullable":false,"precision":3,"scale":1}"#, #""98765.4321""#),
        (#"{"type":"float","nullable":false}"#, "98765.43210"),
        (#"{"type":"datetime","nullable":false}"#, #""9876-54-32T10:98:76.543210Z""#),
        (#"{"type":"json","nullable":false}"#, #""{\"secret98765\":1,\"a\":2}""#),
        (#"{"type":"bytes","nullable":false}"#, #""secret98765==""#),
        (#"{"type":"string","nullable":false}"#, #""secret98765\uFDD0""#),
        (#"{"type":"boolean","nullable":false}"#, #""secret98765""#),
    ])
    func descriptionsAreValueFree(spec: String, wire: String) throws {
        let error = try #require(try failure(spec, wire))
        #expect(!error.description.contains("98765"))
        #expect(!error.description.contains("secret"))
        #expect(!error.rule.isEmpty)
    }

    @Test("every rule name is distinct snake_case")
    func ruleNamesAreDistinct() {
        let all: [PortableValueError] = [
            .nullNotAllowed, .typeMismatch(expected: .int, found: "string"), .intNotCanonical, .intOutOfRange,
            .int64NotCanonical, .int64OutOfRange, .decimalNotCanonical, .decimalPrecisionExceeded,
            .decimalScaleExceeded, .floatNotFinite, .floatNegativeZero, .floatNotCanonical, .datetimeInvalid,
            .dateInvalid, .timeInvalid, .jsonMalformed, .jsonDuplicateMember, .jsonNoncharacter,
            .jsonNonFiniteNumber, .jsonUnsafeInteger, .jsonNotCanonical, .bytesNotCanonical, .stringNoncharacter,
        ]
        #expect(Set(all.map(\.rule)).count == all.count)
        for rule in all.map(\.rule) {
            let snakeCase = rule.unicodeScalars.allSatisfy {
                ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "_"
            }
            #expect(snakeCase)
        }
    }
}

@Suite("Portable types and field specs")
struct PortableValueFieldSpecTests {
    @Test("the eleven types carry the wire names and tags of integrity §1", arguments: [
        ("string", 0x01, true), ("int", 0x02, true), ("int64", 0x03, true), ("decimal", 0x04, false),
        ("float", 0x05, false), ("boolean", 0x06, false), ("datetime", 0x07, false), ("date", 0x08, false),
        ("time", 0x09, false), ("json", 0x0a, false), ("bytes", 0x0b, false),
    ] as [(String, UInt8, Bool)])
    func typeTable(name: String, tag: UInt8, isKey: Bool) throws {
        let type = try #require(PortableType(wireName: name))
        #expect(type.rawValue == name)
        #expect(type.tag == tag)
        #expect(type.isKeyType == isKey)
        #expect(PortableType(tag: tag) == type)
    }

    @Test("type names are matched exactly", arguments: ["String", "integer", "text", "int ", "double", ""])
    func unknownTypeNames(name: String) {
        #expect(PortableType(wireName: name) == nil)
    }

    @Test("precision and scale are required for decimal and forbidden elsewhere")
    func decimalPrecisionAndScale() throws {
        #expect(throws: FieldSpecError.decimalPrecisionScaleMissing) {
            try FieldSpec(type: .decimal, nullable: false)
        }
        #expect(throws: FieldSpecError.decimalPrecisionScaleMissing) {
            try FieldSpec(type: .decimal, nullable: false, precision: 6)
        }
        #expect(throws: FieldSpecError.precisionScaleOnNonDecimal) {
            try FieldSpec(type: .int, nullable: false, precision: 6, scale: 2)
        }
        #expect(throws: FieldSpecError.precisionScaleOnNonDecimal) {
            try FieldSpec(type: .string, nullable: false, scale: 0)
        }
        #expect(throws: FieldSpecError.precisionOutOfRange) {
            try FieldSpec(type: .decimal, nullable: false, precision: 0, scale: 0)
        }
        #expect(throws: FieldSpecError.scaleOutOfRange) {
            try FieldSpec(type: .decimal, nullable: false, precision: 4, scale: 5)
        }
        #expect(throws: FieldSpecError.scaleOutOfRange) {
            try FieldSpec(type: .decimal, nullable: false, precision: 4, scale: -1)
        }
        let spec = try FieldSpec(type: .decimal, nullable: true, precision: 4, scale: 4)
        #expect(spec.precision == 4 && spec.scale == 4)
    }

    @Test("a field spec JSON object is parsed exactly", arguments: [
        (#"{"type":"decimal","nullable":false,"precision":6,"scale":2}"#, nil),
        (#"{"nullable":true,"type":"bytes"}"#, nil),
        (#"[]"#, FieldSpecError.notAnObject),
        (#"{"type":"int"}"#, .missingMember("nullable")),
        (#"{"nullable":true}"#, .missingMember("type")),
        (#"{"type":"int","nullable":true,"writable":true}"#, .unknownMember("writable")),
        (#"{"type":"int","nullable":"true"}"#, .memberType("nullable")),
        (#"{"type":3,"nullable":true}"#, .memberType("type")),
        (#"{"type":"varchar","nullable":true}"#, .unknownType),
        (#"{"type":"decimal","nullable":true,"precision":6.0,"scale":2}"#, .notAnInteger("precision")),
        (#"{"type":"decimal","nullable":true,"precision":6,"scale":"2"}"#, .memberType("scale")),
        (#"{"type":"decimal","nullable":true,"precision":6}"#, .decimalPrecisionScaleMissing),
        (#"{"type":"float","nullable":true,"precision":6,"scale":2}"#, .precisionScaleOnNonDecimal),
    ] as [(String, FieldSpecError?)])
    func fieldSpecJSON(text: String, expected: FieldSpecError?) throws {
        let json = try IntegrityFixtures.json(text)
        do throws(FieldSpecError) {
            let spec = try FieldSpec(json: json)
            #expect(expected == nil)
            #expect(try FieldSpec(json: spec.json) == spec)
        } catch {
            #expect(error == expected)
        }
    }
}
