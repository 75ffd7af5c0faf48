/// Seed 004's `listQueryTemplate`: a query string with a closed `{token}` vocabulary — `{since}`, `{limit}`,
/// `{cursorField}` — deliberately not RFC 6570. Token values are percent-encoded (everything but RFC 3986's
/// unreserved characters); the literal text is sent as written except that a space is sent as `%20`, so an
/// OData filter such as `$filter={cursorField} gt {since}&$top={limit}` is a valid request target.
public struct DeltaListQueryTemplate: Sendable, Equatable {
    enum Part: Sendable, Equatable {
        case literal(String)
        case since, limit, cursorField
    }

    let parts: [Part]
    /// The template as written in the definition.
    public let text: String

    /// Parses `text`; an unknown token, an unclosed `{` or a stray `}` is refused naming `member`.
    public init(_ text: String, member: String) throws(DeltaSourceError) {
        var parts: [Part] = []
        var literal = ""
        var rest = Substring(text)
        while let character = rest.first {
            rest = rest.dropFirst()
            switch character {
            case "{":
                guard let close = rest.firstIndex(of: "}") else {
                    throw .definition(member: member, rule: "unclosed_token")
                }
                let name = rest[..<close]
                rest = rest[rest.index(after: close)...]
                let part: Part
                switch name {
                case "since": part = .since
                case "limit": part = .limit
                case "cursorField": part = .cursorField
                default: throw .definition(member: member, rule: "unknown_token")
                }
                if !literal.isEmpty { parts.append(.literal(literal)) }
                literal = ""
                parts.append(part)
            case "}":
                throw .definition(member: member, rule: "stray_closing_brace")
            default:
                guard let scalar = character.unicodeScalars.first, character.unicodeScalars.count == 1,
                      scalar.value >= 0x20, scalar.value < 0x7F, character != "#"
                else { throw .definition(member: member, rule: "not_printable_ascii") }
                literal.append(character == " " ? "%20" : String(character))
            }
        }
        if !literal.isEmpty { parts.append(.literal(literal)) }
        guard parts.contains(.since) else { throw .definition(member: member, rule: "missing_since_token") }
        self.parts = parts
        self.text = text
    }

    /// The query string for one page.
    public func render(since: String, limit: Int, cursorField: String) -> String {
        var out = ""
        for part in parts {
            switch part {
            case .literal(let text): out += text
            case .since: out += Self.percentEncoded(since)
            case .limit: out += String(limit)
            case .cursorField: out += Self.percentEncoded(cursorField)
            }
        }
        return out
    }

    /// Every octet outside `A-Z a-z 0-9 - . _ ~` as `%XX` (uppercase hex).
    public static func percentEncoded(_ value: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(value.utf8.count)
        for octet in value.utf8 {
            switch octet {
            case 0x41...0x5A, 0x61...0x7A, 0x30...0x39, 0x2D, 0x2E, 0x5F, 0x7E: out.append(octet)
            default: out += [0x25, hex[Int(octet >> 4)], hex[Int(octet & 0x0F)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
