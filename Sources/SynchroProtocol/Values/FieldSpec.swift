/// What the manifest says about one field's values: its portable type, whether SQL null is
/// allowed, and for `decimal` its precision and scale (`spec/integrity.md` §1).
///
/// A spec can only be built valid: precision and scale are present exactly for `decimal`, with
/// precision ≥ 1 and 0 ≤ scale ≤ precision.
public struct FieldSpec: Sendable, Hashable {
    /// The portable type that decides the wire form and the digest tag.
    public let type: PortableType
    /// Whether SQL null (JSON `null`) is a valid value.
    public let nullable: Bool
    /// Total number of significant decimal digits; only for `decimal`.
    public let precision: Int?
    /// Number of digits after the decimal point; only for `decimal`.
    public let scale: Int?

    /// A validated spec; throws when precision/scale do not fit the type.
    public init(type: PortableType, nullable: Bool, precision: Int? = nil, scale: Int? = nil)
    throws(FieldSpecError) {
        if type == .decimal {
            guard let precision, let scale else { throw .decimalPrecisionScaleMissing }
            guard precision >= 1 && Int64(precision) <= SchemaReference.maxProtocolInteger else {
                throw .precisionOutOfRange
            }
            guard scale >= 0 && scale <= precision else { throw .scaleOutOfRange }
        } else if precision != nil || scale != nil {
            throw .precisionScaleOnNonDecimal
        }
        self.type = type
        self.nullable = nullable
        self.precision = precision
        self.scale = scale
    }

    /// Parses the exact object `{"type", "nullable"[, "precision", "scale"]}` as the conformance
    /// vectors give a typed value's field spec.
    public init(json: JSONValue) throws(FieldSpecError) {
        guard case .object(let object) = json else { throw .notAnObject }
        var type: PortableType?
        var nullable: Bool?
        var precision: Int?
        var scale: Int?
        for member in object.members {
            let key = member.key
            if key.exactlyEquals("type") {
                guard type == nil else { throw .duplicateMember("type") }
                guard case .string(let name) = member.value else { throw .memberType("type") }
                guard let parsed = PortableType(wireName: name) else { throw .unknownType }
                type = parsed
            } else if key.exactlyEquals("nullable") {
                guard nullable == nil else { throw .duplicateMember("nullable") }
                guard case .bool(let flag) = member.value else { throw .memberType("nullable") }
                nullable = flag
            } else if key.exactlyEquals("precision") {
                guard precision == nil else { throw .duplicateMember("precision") }
                precision = try Self.integer(member.value, name: "precision")
            } else if key.exactlyEquals("scale") {
                guard scale == nil else { throw .duplicateMember("scale") }
                scale = try Self.integer(member.value, name: "scale")
            } else {
                throw .unknownMember(key)
            }
        }
        guard let type else { throw .missingMember("type") }
        guard let nullable else { throw .missingMember("nullable") }
        try self.init(type: type, nullable: nullable, precision: precision, scale: scale)
    }

    /// The wire object of this spec (the inverse of ``init(json:)``).
    public var json: JSONValue {
        var members = [JSONMember("type", .string(type.rawValue)), JSONMember("nullable", .bool(nullable))]
        if let precision, let scale {
            members.append(JSONMember("precision", .number(JSONNumber(Int64(precision)))))
            members.append(JSONMember("scale", .number(JSONNumber(Int64(scale)))))
        }
        return .object(JSONObject(members))
    }

    /// A plain JSON integer literal (no fraction, exponent or `-0`) within the protocol range.
    static func integer(_ value: JSONValue, name: String) throws(FieldSpecError) -> Int {
        guard case .number(let number) = value else { throw .memberType(name) }
        guard !number.isNegativeZeroLiteral, let exact = number.exactInt64,
              exact.magnitude <= UInt64(SchemaReference.maxProtocolInteger)
        else { throw .notAnInteger(name) }
        return Int(exact)
    }
}

/// Why a field spec is invalid; `rule` is the stable name used in reports.
public enum FieldSpecError: Error, Sendable, Hashable, CustomStringConvertible {
    case notAnObject
    case missingMember(String)
    case unknownMember(String)
    case duplicateMember(String)
    /// A member has the wrong JSON type (e.g. `"nullable": "yes"`).
    case memberType(String)
    /// `precision` or `scale` is not a plain JSON integer literal in the protocol range.
    case notAnInteger(String)
    /// `type` is not one of the eleven portable type names.
    case unknownType
    case decimalPrecisionScaleMissing
    case precisionScaleOnNonDecimal
    case precisionOutOfRange
    case scaleOutOfRange

    /// Stable snake_case name of the broken rule.
    public var rule: String {
        switch self {
        case .notAnObject: "not_an_object"
        case .missingMember: "missing_member"
        case .unknownMember: "unknown_member"
        case .duplicateMember: "duplicate_member"
        case .memberType: "member_type"
        case .notAnInteger: "not_an_integer"
        case .unknownType: "unknown_type"
        case .decimalPrecisionScaleMissing: "decimal_precision_scale_missing"
        case .precisionScaleOnNonDecimal: "precision_scale_on_non_decimal"
        case .precisionOutOfRange: "precision_out_of_range"
        case .scaleOutOfRange: "scale_out_of_range"
        }
    }

    public var description: String {
        switch self {
        case .notAnObject: "field spec is not a JSON object"
        case .missingMember(let name): "field spec lacks member \(name)"
        case .unknownMember(let name): "field spec has unknown member \(name)"
        case .duplicateMember(let name): "field spec repeats member \(name)"
        case .memberType(let name): "field spec member \(name) has the wrong JSON type"
        case .notAnInteger(let name): "field spec member \(name) is not a plain integer in the protocol range"
        case .unknownType: "field spec type is not one of the eleven portable types"
        case .decimalPrecisionScaleMissing: "a decimal field needs both precision and scale"
        case .precisionScaleOnNonDecimal: "precision and scale are allowed only on decimal fields"
        case .precisionOutOfRange: "decimal precision must be at least 1"
        case .scaleOutOfRange: "decimal scale must lie in 0...precision"
        }
    }
}
