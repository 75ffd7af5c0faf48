import SynchroProtocol

/// Reads one object of a pipeline file strictly: every member known, each of its declared type, errors naming
/// the member by its full path.
struct PipelineMemberReader {
    let object: JSONObject
    let path: String

    /// Checks that `value` (at `path`) is an object whose members are all in `allowed`.
    init(_ value: JSONValue, path: String, allowed: [String]) throws(PipelineDefinitionError) {
        guard case .object(let object) = value else { throw .wrongType(member: path, expected: "an object") }
        for member in object.members where !allowed.contains(where: { $0.exactlyEquals(member.key) }) {
            throw .unknownMember(member: Self.join(path, member.key))
        }
        self.object = object
        self.path = path
    }

    static func join(_ path: String, _ name: String) -> String {
        path.isEmpty ? name : "\(path).\(name)"
    }

    func member(_ name: String) -> String {
        Self.join(path, name)
    }

    func has(_ name: String) -> Bool {
        object[name] != nil
    }

    func required(_ name: String) throws(PipelineDefinitionError) -> JSONValue {
        guard let value = object[name] else { throw .missingMember(member: member(name)) }
        return value
    }

    /// A non-empty string without control characters.
    func string(_ name: String) throws(PipelineDefinitionError) -> String? {
        guard let value = object[name] else { return nil }
        guard case .string(let text) = value else { throw .wrongType(member: member(name), expected: "a string") }
        guard !text.isEmpty else { throw .invalidValue(member: member(name), reason: "must not be empty") }
        guard !text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
            throw .invalidValue(member: member(name), reason: "must not contain control characters")
        }
        return text
    }

    func bool(_ name: String) throws(PipelineDefinitionError) -> Bool? {
        guard let value = object[name] else { return nil }
        guard case .bool(let flag) = value else { throw .wrongType(member: member(name), expected: "true or false") }
        return flag
    }

    /// A plain integer literal (no fraction or exponent) within `range`.
    func integer(_ name: String, in range: ClosedRange<Int64>) throws(PipelineDefinitionError) -> Int64? {
        guard let value = object[name] else { return nil }
        guard case .number(let number) = value, number.isIntegerLiteral, !number.isNegativeZeroLiteral else {
            throw .wrongType(member: member(name), expected: "an integer")
        }
        guard let integer = number.exactInt64, range.contains(integer) else {
            throw .outOfRange(member: member(name), range: "an integer in \(range.lowerBound)…\(range.upperBound)")
        }
        return integer
    }

    /// A non-empty array of distinct non-empty strings.
    func stringList(_ name: String) throws(PipelineDefinitionError) -> [String]? {
        guard let value = object[name] else { return nil }
        guard case .array(let items) = value else { throw .wrongType(member: member(name), expected: "an array") }
        guard !items.isEmpty else { throw .invalidValue(member: member(name), reason: "must not be empty") }
        var result: [String] = []
        for (index, item) in items.enumerated() {
            let place = "\(member(name))[\(index)]"
            guard case .string(let text) = item else { throw .wrongType(member: place, expected: "a string") }
            guard !text.isEmpty else { throw .invalidValue(member: place, reason: "must not be empty") }
            guard !result.contains(where: { $0.exactlyEquals(text) }) else { throw .duplicateValue(member: place) }
            result.append(text)
        }
        return result
    }

    /// The reader of a nested object member.
    func child(_ name: String, allowed: [String]) throws(PipelineDefinitionError) -> PipelineMemberReader? {
        guard let value = object[name] else { return nil }
        return try PipelineMemberReader(value, path: member(name), allowed: allowed)
    }
}
