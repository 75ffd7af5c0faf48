import SynchroProtocol

/// Reads one JSON object of `dataset.json` with exact-object rules: required members present, no
/// unknown member, every member of its declared JSON type. Failures carry the object's location
/// and the member name, never the member's value.
struct DatasetJSONReader {
    let object: JSONObject
    let location: String

    /// Checks that `value` is an object whose member names all come from `required` or `optional`
    /// and that every `required` member is present.
    init(_ value: JSONValue, at location: String, required: [String], optional: [String] = [])
    throws(DatasetError) {
        guard case .object(let object) = value else { throw .dataset(.notAnObject, location) }
        for member in object.members {
            let known = required.contains { $0.exactlyEquals(member.key) }
                || optional.contains { $0.exactlyEquals(member.key) }
            guard known else { throw .dataset(.unknownMember, Self.join(location, member.key)) }
        }
        for name in required where object[name] == nil {
            throw .dataset(.missingMember, Self.join(location, name))
        }
        self.object = object
        self.location = location
    }

    /// `location.name`, or `name` alone at the top level.
    static func join(_ location: String, _ name: String) -> String {
        location.isEmpty ? name : "\(location).\(name)"
    }

    /// The location of member `name` of this object.
    func path(_ name: String) -> String { Self.join(location, name) }

    func has(_ name: String) -> Bool { object[name] != nil }

    func value(_ name: String) -> JSONValue? { object[name] }

    /// A nonempty string member; nil when absent.
    func string(_ name: String) throws(DatasetError) -> String? {
        guard let value = object[name] else { return nil }
        guard case .string(let text) = value else { throw .dataset(.memberType, path(name)) }
        guard !text.isEmpty else { throw .dataset(.invalidValue, path(name)) }
        return text
    }

    /// A string member that may be empty (prefixes); nil when absent.
    func text(_ name: String) throws(DatasetError) -> String? {
        guard let value = object[name] else { return nil }
        guard case .string(let text) = value else { throw .dataset(.memberType, path(name)) }
        return text
    }

    /// A plain JSON integer literal (no fraction, exponent or `-0`) that fits in `Int64`.
    func integer(_ name: String) throws(DatasetError) -> Int64? {
        guard let value = object[name] else { return nil }
        guard case .number(let number) = value else { throw .dataset(.memberType, path(name)) }
        guard !number.isNegativeZeroLiteral, let exact = number.exactInt64 else {
            throw .dataset(.invalidValue, path(name))
        }
        return exact
    }

    /// An integer member within `range`.
    func integer(_ name: String, in range: ClosedRange<Int64>) throws(DatasetError) -> Int64? {
        guard let value = try integer(name) else { return nil }
        guard range.contains(value) else { throw .dataset(.invalidValue, path(name)) }
        return value
    }

    /// A number member within 0...1 (ratios and probabilities; not a portable value, so binary64 is fine).
    func ratio(_ name: String) throws(DatasetError) -> Double? {
        guard let value = object[name] else { return nil }
        guard case .number(let number) = value else { throw .dataset(.memberType, path(name)) }
        guard let ratio = number.doubleValue, ratio >= 0, ratio <= 1 else {
            throw .dataset(.invalidValue, path(name))
        }
        return ratio
    }

    func bool(_ name: String) throws(DatasetError) -> Bool? {
        guard let value = object[name] else { return nil }
        guard case .bool(let flag) = value else { throw .dataset(.memberType, path(name)) }
        return flag
    }

    func array(_ name: String) throws(DatasetError) -> [JSONValue]? {
        guard let value = object[name] else { return nil }
        guard case .array(let elements) = value else { throw .dataset(.memberType, path(name)) }
        return elements
    }

    func objectMember(_ name: String) throws(DatasetError) -> JSONObject? {
        guard let value = object[name] else { return nil }
        guard case .object(let nested) = value else { throw .dataset(.memberType, path(name)) }
        return nested
    }

    /// The text of a number or string member, for exact decimal literals; nil when absent.
    func literal(_ name: String) throws(DatasetError) -> String? {
        switch object[name] {
        case nil: nil
        case .number(let number)?: number.literal
        case .string(let text)?: text
        default: throw .dataset(.memberType, path(name))
        }
    }
}
