/// Why a row identity or row digest cannot be computed (`spec/integrity.md` §4.3–§4.5).
///
/// Field IDs are schema identifiers and may appear; row values never do, not even the key.
public enum RowDigestError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The governing manifest has no table with this ID.
    case unknownTable(tableID: String)
    /// The separate key value is null or not the canonical form of the key field's type.
    case invalidPrimaryKey(PortableValueError)
    /// The row is not a JSON object.
    case rowNotAnObject
    /// The row has a member that names no field of the table.
    case unknownField(fieldID: String)
    /// The row names a field twice.
    case duplicateField(fieldID: String)
    /// The row lacks a field of the table (every field, the key included, must be present).
    case missingField(fieldID: String)
    /// A field's value is not valid for its manifest type; the inner error names the value rule.
    case invalidValue(fieldID: String, PortableValueError)
    /// The row's key member does not encode identically to the separate key value.
    case primaryKeyMismatch
    /// The server version is the empty string.
    case emptyServerVersion

    /// Stable snake_case name of the broken rule.
    public var rule: String {
        switch self {
        case .unknownTable: "unknown_table"
        case .invalidPrimaryKey: "invalid_primary_key"
        case .rowNotAnObject: "row_not_object"
        case .unknownField: "unknown_field"
        case .duplicateField: "duplicate_field"
        case .missingField: "missing_field"
        case .invalidValue: "invalid_value"
        case .primaryKeyMismatch: "pk_mismatch"
        case .emptyServerVersion: "empty_server_version"
        }
    }

    /// The value rule behind `invalid_primary_key` or `invalid_value`, nil for the other cases.
    public var valueRule: String? {
        switch self {
        case .invalidPrimaryKey(let error), .invalidValue(_, let error): error.rule
        default: nil
        }
    }

    public var description: String {
        switch self {
        case .unknownTable(let t): "the manifest has no table \(t)"
        case .invalidPrimaryKey(let error): "primary key: \(error)"
        case .rowNotAnObject: "the row is not a JSON object"
        case .unknownField(let f): "the row has unknown field \(f)"
        case .duplicateField(let f): "the row repeats field \(f)"
        case .missingField(let f): "the row lacks field \(f)"
        case .invalidValue(let f, let error): "field \(f): \(error)"
        case .primaryKeyMismatch: "the row's key field does not encode identically to the separate key"
        case .emptyServerVersion: "the server version is empty"
        }
    }
}
