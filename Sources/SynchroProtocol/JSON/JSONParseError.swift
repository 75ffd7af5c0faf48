/// Why a byte sequence is not accepted as protocol JSON, and where.
///
/// The description names the rule and the byte offset only: never the text around it, which may be
/// a credential, a cursor or a row value.
public struct JSONParseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The rule the input broke; the raw value is the stable name used in CLI and JSON reports.
    public enum Rule: String, Sendable, CaseIterable {
        case unexpectedEnd = "unexpected_end"
        case unexpectedByte = "unexpected_byte"
        case trailingContent = "trailing_content"
        case invalidUTF8 = "invalid_utf8"
        case loneSurrogate = "lone_surrogate"
        case invalidEscape = "invalid_escape"
        case controlCharacterInString = "control_character_in_string"
        case invalidNumber = "invalid_number"
        case duplicateMember = "duplicate_member"
        case depthLimitExceeded = "depth_limit_exceeded"
        case sizeLimitExceeded = "size_limit_exceeded"
        case valueLimitExceeded = "value_limit_exceeded"
    }

    public let rule: Rule
    /// Offset in octets from the start of the document.
    public let offset: Int

    public init(_ rule: Rule, at offset: Int) {
        self.rule = rule
        self.offset = offset
    }

    public var description: String { "invalid JSON: \(rule.rawValue) at byte \(offset)" }
}

/// Bounds the parser enforces before it allocates anything for a document.
public struct JSONLimits: Sendable, Equatable {
    /// Largest accepted document, in octets.
    public var maxBytes: Int
    /// Deepest accepted nesting of arrays and objects (the top-level container is depth 1).
    /// The parser recurses once per level, so this also bounds its stack use: keep it in the
    /// hundreds, not the hundreds of thousands.
    public var maxDepth: Int
    /// Most values (scalars, arrays and objects, at any depth) one document may hold. A value costs far more
    /// memory parsed than as text (`[0,0,…]` two octets per value), so a byte bound alone lets a 64 MiB body grow
    /// the parsed tree to gigabytes; a reader of untrusted documents bounds the count as well. Unbounded by
    /// default.
    public var maxValues: Int

    public init(maxBytes: Int = 64 * 1024 * 1024, maxDepth: Int = 128, maxValues: Int = .max) {
        self.maxBytes = maxBytes
        self.maxDepth = maxDepth
        self.maxValues = maxValues
    }

    /// The guards of the upstream native clients: 64 MiB per body, depth 128.
    public static let protocolDefault = JSONLimits()
}
