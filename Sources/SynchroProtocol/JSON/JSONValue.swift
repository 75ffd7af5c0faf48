/// A parsed JSON value that keeps what the protocol needs and Foundation loses: the exact text of
/// every number and the order of object members as received.
///
/// Values come out of ``StrictJSONParser`` (duplicate members, lone surrogates and invalid UTF-8
/// already rejected) or are built by code that emits protocol JSON.
public enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case number(JSONNumber)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)

    /// The JSON type name, for error messages that must not show the value itself.
    public var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "boolean"
        case .number: "number"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        }
    }

    /// The string, when this is a string.
    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    /// The object, when this is an object.
    public var objectValue: JSONObject? {
        if case .object(let o) = self { return o }
        return nil
    }

    /// The elements, when this is an array.
    public var arrayValue: [JSONValue]? {
        if case .array(let a) = self { return a }
        return nil
    }

    /// The number, when this is a number.
    public var numberValue: JSONNumber? {
        if case .number(let n) = self { return n }
        return nil
    }

    /// The boolean, when this is `true` or `false`.
    public var boolValue: Bool? {
        if case .bool(let b) = self { return b }
        return nil
    }

    /// True for `null`.
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }
}

/// A JSON number kept as its exact source text, so `1`, `1.0` and `1e0` stay distinguishable.
public struct JSONNumber: Sendable, Hashable, CustomStringConvertible {
    /// The number exactly as written (validated against the RFC 8259 number grammar).
    public let literal: String

    /// Wraps text already known to match the RFC 8259 number grammar (the parser's output).
    init(validatedLiteral: String) {
        self.literal = validatedLiteral
    }

    /// Wraps `literal` after checking it against the RFC 8259 number grammar.
    public init?(literal: String) {
        guard JSONNumber.matchesGrammar(Array(literal.utf8)) else { return nil }
        self.literal = literal
    }

    /// A number for an integer, written in its plain decimal form.
    public init(_ value: Int64) {
        self.literal = String(value)
    }

    /// A number for a finite double, written in its RFC 8785 (ECMAScript) form.
    public init?(_ value: Double) {
        guard value.isFinite else { return nil }
        self.literal = ECMAScriptNumber.format(value)
    }

    /// The literal exactly as written.
    public var description: String { literal }

    /// True when the literal has neither fraction nor exponent (`12`, `-3`, `-0`).
    public var isIntegerLiteral: Bool {
        !literal.utf8.contains { $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") }
    }

    /// The exact integer when the literal is a plain integer (no fraction, no exponent) that fits
    /// in Int64; `-0` gives 0 (callers that forbid `-0` check ``isNegativeZeroLiteral``).
    public var exactInt64: Int64? {
        guard isIntegerLiteral else { return nil }
        return Int64(literal)
    }

    /// True for `-0` written as an integer literal.
    public var isNegativeZeroLiteral: Bool { literal == "-0" }

    /// The binary64 value nearest to the literal (round half to even), or nil when it is not finite.
    public var doubleValue: Double? {
        guard let d = Double(literal), d.isFinite else { return nil }
        return d
    }

    /// The RFC 8785 rendering of this number, or nil when it is outside finite binary64.
    public var canonicalLiteral: String? {
        doubleValue.map(ECMAScriptNumber.format)
    }

    static func matchesGrammar(_ b: [UInt8]) -> Bool {
        var i = 0
        let n = b.count
        func digit(_ i: Int) -> Bool { i < n && b[i] >= 0x30 && b[i] <= 0x39 }
        if i < n && b[i] == UInt8(ascii: "-") { i += 1 }
        guard digit(i) else { return false }
        if b[i] == UInt8(ascii: "0") { i += 1 } else { while digit(i) { i += 1 } }
        if i < n && b[i] == UInt8(ascii: ".") {
            i += 1
            guard digit(i) else { return false }
            while digit(i) { i += 1 }
        }
        if i < n && (b[i] == UInt8(ascii: "e") || b[i] == UInt8(ascii: "E")) {
            i += 1
            if i < n && (b[i] == UInt8(ascii: "+") || b[i] == UInt8(ascii: "-")) { i += 1 }
            guard digit(i) else { return false }
            while digit(i) { i += 1 }
        }
        return i == n
    }
}

/// One member of a JSON object.
public struct JSONMember: Sendable, Hashable {
    /// The member name, unescaped.
    public let key: String
    /// The member value.
    public let value: JSONValue

    /// A member named `key` holding `value`.
    public init(_ key: String, _ value: JSONValue) {
        self.key = key
        self.value = value
    }
}

/// A JSON object with unique member names, in the order they were received or built.
public struct JSONObject: Sendable, Hashable {
    /// The members in received (or built) order.
    public let members: [JSONMember]

    /// Builds an object; the caller guarantees unique keys (the parser checks them on input).
    public init(_ members: [JSONMember]) {
        self.members = members
    }

    /// Builds an object from a literal such as `["a": .null]`; keys must be unique.
    public init(_ pairs: KeyValuePairs<String, JSONValue>) {
        self.members = pairs.map { JSONMember($0.key, $0.value) }
    }

    /// The number of members.
    public var count: Int { members.count }
    /// The member names in order.
    public var keys: [String] { members.map(\.key) }

    /// The value of the member whose name has exactly these Unicode scalars, if any.
    public subscript(key: String) -> JSONValue? {
        for m in members where m.key.exactlyEquals(key) { return m.value }
        return nil
    }
}

// Equality and hashing compare strings by exact Unicode scalars, not by Swift's canonical
// equivalence: protocol values `"é"` and `"e\u{301}"` are different.
extension JSONValue {
    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case (.bool(let a), .bool(let b)): a == b
        case (.number(let a), .number(let b)): a == b
        case (.string(let a), .string(let b)): a.exactlyEquals(b)
        case (.array(let a), .array(let b)): a == b
        case (.object(let a), .object(let b)): a == b
        default: false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .null: hasher.combine(0)
        case .bool(let b): hasher.combine(1); hasher.combine(b)
        case .number(let n): hasher.combine(2); hasher.combine(n)
        case .string(let s): hasher.combine(3); for byte in s.utf8 { hasher.combine(byte) }
        case .array(let a): hasher.combine(4); hasher.combine(a)
        case .object(let o): hasher.combine(5); hasher.combine(o)
        }
    }
}

extension JSONMember {
    public static func == (lhs: JSONMember, rhs: JSONMember) -> Bool {
        lhs.key.exactlyEquals(rhs.key) && lhs.value == rhs.value
    }

    public func hash(into hasher: inout Hasher) {
        for byte in key.utf8 { hasher.combine(byte) }
        hasher.combine(value)
    }
}
