/// Reads an exact protocol object (`spec/wire-protocol.md` §2.1): every required member present,
/// no unknown member, every member of its declared type. Failures name the member and the rule,
/// never the value.
public struct ExactObjectReader: Sendable {
    /// A structural rule a request object broke.
    public struct Violation: Error, Sendable, Equatable, CustomStringConvertible {
        /// Stable snake_case rule name, e.g. `missing_member`.
        public let rule: String
        /// Dotted path of the member, e.g. `scopes.*.cursor`.
        public let member: String

        public init(_ rule: String, _ member: String) {
            self.rule = rule
            self.member = member
        }

        public var description: String { "\(rule) at \(member)" }
    }

    public let object: JSONObject
    public let path: String

    /// Checks the member set of `value` and returns a reader for it.
    public init(
        _ value: JSONValue, path: String, required: Set<String>, optional: Set<String> = []
    ) throws(Violation) {
        guard case .object(let object) = value else { throw Violation("not_an_object", path) }
        // Sorted only to name the first missing member in a stable order, once one is missing.
        if required.contains(where: { object[$0] == nil }),
            let name = required.sorted().first(where: { object[$0] == nil })
        {
            throw Violation("missing_member", Self.join(path, name))
        }
        for member in object.members where !required.contains(member.key) && !optional.contains(member.key) {
            throw Violation("unknown_member", path)
        }
        self.object = object
        self.path = path
    }

    static func join(_ path: String, _ name: String) -> String { path.isEmpty ? name : "\(path).\(name)" }

    public func has(_ name: String) -> Bool { object[name] != nil }

    public func value(_ name: String) throws(Violation) -> JSONValue {
        guard let value = object[name] else { throw Violation("missing_member", Self.join(path, name)) }
        return value
    }

    public func string(_ name: String, nonEmpty: Bool = true) throws(Violation) -> String {
        guard case .string(let s) = try value(name) else { throw Violation("wrong_type", Self.join(path, name)) }
        if nonEmpty && s.utf8.isEmpty { throw Violation("empty_string", Self.join(path, name)) }
        return s
    }

    public func bool(_ name: String) throws(Violation) -> Bool {
        guard case .bool(let b) = try value(name) else { throw Violation("wrong_type", Self.join(path, name)) }
        return b
    }

    /// A plain integer literal (no fraction, exponent or `-0`) within `range` (§2.2).
    public func integer(_ name: String, in range: ClosedRange<Int64>) throws(Violation) -> Int64 {
        try Self.integer(try value(name), in: range, member: Self.join(path, name))
    }

    public func object(_ name: String) throws(Violation) -> JSONObject {
        guard case .object(let o) = try value(name) else { throw Violation("wrong_type", Self.join(path, name)) }
        return o
    }

    public func array(_ name: String) throws(Violation) -> [JSONValue] {
        guard case .array(let a) = try value(name) else { throw Violation("wrong_type", Self.join(path, name)) }
        return a
    }

    /// A string or `null` (cursors).
    public func nullableString(_ name: String) throws(Violation) -> String? {
        switch try value(name) {
        case .null: return nil
        case .string(let s): return s
        default: throw Violation("wrong_type", Self.join(path, name))
        }
    }

    public func uuid(_ name: String) throws(Violation) -> String {
        let s = try string(name)
        guard WireFormats.isCanonicalUUID(s) else { throw Violation("invalid_uuid", Self.join(path, name)) }
        return s
    }

    public func schemaReference(_ name: String) throws(Violation) -> SchemaReference {
        do {
            return try SchemaReference(json: try value(name))
        } catch {
            throw Violation("invalid_schema_reference", Self.join(path, name))
        }
    }

    /// Protocol integer check on a bare value.
    public static func integer(_ value: JSONValue, in range: ClosedRange<Int64>, member: String) throws(Violation)
        -> Int64
    {
        guard case .number(let n) = value, n.isIntegerLiteral, !n.isNegativeZeroLiteral, let v = n.exactInt64 else {
            throw Violation("invalid_integer", member)
        }
        guard range.contains(v) else { throw Violation("integer_out_of_range", member) }
        return v
    }

    /// 1…2^53−1.
    public static let positive: ClosedRange<Int64> = 1...SchemaReference.maxProtocolInteger
    /// 0…2^53−1.
    public static let nonNegative: ClosedRange<Int64> = 0...SchemaReference.maxProtocolInteger
    /// Pull and rebuild page limits, 1…1000 (§9).
    public static let pageLimit: ClosedRange<Int64> = 1...1000
}
