/// The eleven portable value types a manifest field can have, spelled exactly as on the wire
/// (`spec/integrity.md` §1, `spec/wire-protocol.md` §2.7).
public enum PortableType: String, Sendable, Hashable, CaseIterable {
    case string
    case int
    case int64
    case decimal
    case float
    case boolean
    case datetime
    case date
    case time
    case json
    case bytes

    /// The type named by `wireName`, compared by exact octets (Swift's `==` would accept a
    /// canonically equivalent spelling, which the protocol does not).
    public init?(wireName: String) {
        guard let match = PortableType.allCases.first(where: { $0.rawValue.exactlyEquals(wireName) }) else {
            return nil
        }
        self = match
    }

    /// The type whose one-octet digest tag is `tag`.
    public init?(tag: UInt8) {
        guard let match = PortableType.allCases.first(where: { $0.tag == tag }) else { return nil }
        self = match
    }

    /// The one-octet tag that starts every typed value of this type in the binary grammar.
    public var tag: UInt8 {
        switch self {
        case .string: 0x01
        case .int: 0x02
        case .int64: 0x03
        case .decimal: 0x04
        case .float: 0x05
        case .boolean: 0x06
        case .datetime: 0x07
        case .date: 0x08
        case .time: 0x09
        case .json: 0x0a
        case .bytes: 0x0b
        }
    }

    /// True for the only types a primary key may have: `string`, `int` and `int64`.
    public var isKeyType: Bool {
        switch self {
        case .string, .int, .int64: true
        default: false
        }
    }
}
