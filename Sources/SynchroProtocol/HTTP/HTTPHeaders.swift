/// One header field: the name as written on the wire and the value without surrounding whitespace.
public struct HTTPHeader: Sendable, Hashable {
    /// The field name; compare it with ``HTTPHeaders`` lookups, which ignore ASCII case.
    public var name: String
    /// The field value.
    public var value: String

    /// A header field `name: value`.
    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}

/// Header fields in wire order with duplicates kept, because the protocol must detect repeated
/// `Authorization` and `Content-Type` headers (wire-protocol §1.2). Lookups ignore ASCII case.
///
/// One type for both sides: the client transport sends and receives these, the reference server parses and
/// answers with them. A pure value; no I/O.
///
/// The description lists field names only: values carry credentials and cursors.
public struct HTTPHeaders: Sendable, Hashable, RandomAccessCollection, ExpressibleByArrayLiteral {
    /// The fields in the order they were received or will be sent.
    public private(set) var fields: [HTTPHeader]

    /// Headers holding `fields` in this order.
    public init(_ fields: [HTTPHeader] = []) {
        self.fields = fields
    }

    /// Headers from `(name, value)` pairs in this order.
    public init(arrayLiteral elements: (String, String)...) {
        fields = elements.map { HTTPHeader(name: $0.0, value: $0.1) }
    }

    public var startIndex: Int { fields.startIndex }
    public var endIndex: Int { fields.endIndex }
    public subscript(position: Int) -> HTTPHeader { fields[position] }

    /// Every value of the fields called `name`, in wire order.
    public func values(for name: String) -> [String] {
        fields.filter { $0.name.equalsIgnoringASCIICase(name) }.map(\.value)
    }

    /// The value of the first field called `name`.
    public func first(_ name: String) -> String? {
        fields.first { $0.name.equalsIgnoringASCIICase(name) }?.value
    }

    /// The value of the field called `name` when exactly one such field is present; `nil` when it is
    /// missing or repeated (the rule for `Authorization` and `Content-Type`).
    public func single(_ name: String) -> String? {
        let matches = values(for: name)
        return matches.count == 1 ? matches[0] : nil
    }

    /// How many fields are called `name`.
    public func count(of name: String) -> Int {
        fields.reduce(0) { $0 + ($1.name.equalsIgnoringASCIICase(name) ? 1 : 0) }
    }

    /// Appends a field after the existing ones, keeping any field of the same name.
    public mutating func append(name: String, value: String) {
        fields.append(HTTPHeader(name: name, value: value))
    }

    /// Removes every field called `name`.
    public mutating func removeAll(named name: String) {
        fields.removeAll { $0.name.equalsIgnoringASCIICase(name) }
    }

    /// Replaces every field called `name` with one field holding `value`.
    public mutating func replace(name: String, value: String) {
        removeAll(named: name)
        append(name: name, value: value)
    }
}

extension HTTPHeaders: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String { "[" + fields.map(\.name).joined(separator: ", ") + "]" }
    public var debugDescription: String { "HTTPHeaders" + description }
    public var customMirror: Mirror { Mirror(self, children: ["names": fields.map(\.name)]) }
}

extension HTTPHeader: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String { "\(name): <redacted>" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["name": name]) }
}

extension String {
    /// Header names are ASCII tokens, so only ASCII letters fold; Unicode case rules must not apply.
    package func equalsIgnoringASCIICase(_ other: String) -> Bool {
        let lhs = utf8
        let rhs = other.utf8
        guard lhs.count == rhs.count else { return false }
        return zip(lhs, rhs).allSatisfy { asciiLowercased($0) == asciiLowercased($1) }
    }
}

private func asciiLowercased(_ byte: UInt8) -> UInt8 {
    (0x41...0x5A).contains(byte) ? byte + 0x20 : byte
}
