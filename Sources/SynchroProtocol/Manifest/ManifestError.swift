/// Why a schema manifest is rejected (`spec/wire-protocol.md` §7.1–§7.3, `spec/integrity.md` §4.2).
///
/// Cases carry member paths and table/field/index IDs, which are schema identifiers, never row
/// data. `rule` is the stable snake_case name used by reports and the conformance runner.
public enum ManifestError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The manifest octets are not one strict JSON text.
    case malformedJSON(JSONParseError)
    /// The value at `path` (e.g. `manifest.tables[2]`) must be a JSON object.
    case notAnObject(path: String)
    case missingMember(path: String, member: String)
    case unknownMember(path: String, member: String)
    case duplicateMember(path: String, member: String)
    /// A member has the wrong JSON type (a string where a boolean belongs, …).
    case memberType(path: String, member: String)
    /// An identifier or name member that must be nonempty is `""`.
    case emptyString(path: String, member: String)
    /// `schema_version` is not a plain integer in 1...2^53−1.
    case invalidSchemaVersion
    /// The declared `schema_hash` is not 64 lowercase hex characters.
    case invalidSchemaHash
    case invalidParentSchema(SchemaReference.Failure)
    case unknownTransitionClass
    /// `transition_class` is `initial` exactly when `parent_schema` is null; this manifest breaks that.
    case transitionParentMismatch
    /// `compatibility_floor` is not a positive integer no greater than `schema_version`.
    case invalidCompatibilityFloor
    case noTables
    case duplicateTable(tableID: String)
    case unknownComposition(tableID: String)
    case noFields(tableID: String)
    case duplicateField(tableID: String, fieldID: String)
    case unknownType(tableID: String, fieldID: String)
    case decimalPrecisionScaleMissing(tableID: String, fieldID: String)
    case precisionScaleOnNonDecimal(tableID: String, fieldID: String)
    case precisionOutOfRange(tableID: String, fieldID: String)
    case scaleOutOfRange(tableID: String, fieldID: String)
    case primaryKeyFieldMissing(tableID: String)
    case primaryKeyType(tableID: String)
    case primaryKeyNullable(tableID: String)
    case primaryKeyWritable(tableID: String)
    /// A lifecycle member (`created_at_field_id`, …) names a field the table does not have.
    case lifecycleFieldMissing(tableID: String, member: String)
    case lifecycleFieldNotDatetime(tableID: String, member: String)
    case lifecycleFieldWritable(tableID: String, member: String)
    case duplicateIndex(tableID: String, indexID: String)
    case indexWithoutFields(tableID: String, indexID: String)
    case indexUnknownField(tableID: String, indexID: String, fieldID: String)
    /// A string or member name holds a Unicode noncharacter, so the body has no RFC 8785 form.
    case noncharacter
    /// The recomputed schema hash differs from the declared one.
    case hashMismatch(declared: String, computed: String)

    /// Stable snake_case name of the broken rule.
    public var rule: String {
        switch self {
        case .malformedJSON: "malformed_json"
        case .notAnObject: "not_an_object"
        case .missingMember: "missing_member"
        case .unknownMember: "unknown_member"
        case .duplicateMember: "duplicate_member"
        case .memberType: "member_type"
        case .emptyString: "empty_string"
        case .invalidSchemaVersion: "invalid_schema_version"
        case .invalidSchemaHash: "invalid_schema_hash"
        case .invalidParentSchema: "invalid_parent_schema"
        case .unknownTransitionClass: "unknown_transition_class"
        case .transitionParentMismatch: "transition_parent_mismatch"
        case .invalidCompatibilityFloor: "invalid_compatibility_floor"
        case .noTables: "no_tables"
        case .duplicateTable: "duplicate_table"
        case .unknownComposition: "unknown_composition"
        case .noFields: "no_fields"
        case .duplicateField: "duplicate_field"
        case .unknownType: "unknown_type"
        case .decimalPrecisionScaleMissing: "decimal_precision_scale_missing"
        case .precisionScaleOnNonDecimal: "precision_scale_on_non_decimal"
        case .precisionOutOfRange: "precision_out_of_range"
        case .scaleOutOfRange: "scale_out_of_range"
        case .primaryKeyFieldMissing: "primary_key_field_missing"
        case .primaryKeyType: "primary_key_type"
        case .primaryKeyNullable: "primary_key_nullable"
        case .primaryKeyWritable: "primary_key_writable"
        case .lifecycleFieldMissing: "lifecycle_field_missing"
        case .lifecycleFieldNotDatetime: "lifecycle_field_not_datetime"
        case .lifecycleFieldWritable: "lifecycle_field_writable"
        case .duplicateIndex: "duplicate_index"
        case .indexWithoutFields: "index_without_fields"
        case .indexUnknownField: "index_unknown_field"
        case .noncharacter: "noncharacter"
        case .hashMismatch: "hash_mismatch"
        }
    }

    public var description: String {
        switch self {
        case .malformedJSON(let error): "manifest is not valid JSON: \(error)"
        case .notAnObject(let path): "\(path) must be a JSON object"
        case .missingMember(let path, let member): "\(path) lacks member \(member)"
        case .unknownMember(let path, let member): "\(path) has unknown member \(member)"
        case .duplicateMember(let path, let member): "\(path) repeats member \(member)"
        case .memberType(let path, let member): "\(path).\(member) has the wrong JSON type"
        case .emptyString(let path, let member): "\(path).\(member) must not be empty"
        case .invalidSchemaVersion: "schema_version must be an integer in 1...2^53-1"
        case .invalidSchemaHash: "schema_hash must be 64 lowercase hex characters"
        case .invalidParentSchema(let failure): "parent_schema is invalid: \(failure)"
        case .unknownTransitionClass: "transition_class must be initial, class_2, class_3 or class_4"
        case .transitionParentMismatch: "transition_class is initial exactly when parent_schema is null"
        case .invalidCompatibilityFloor: "compatibility_floor must be a positive integer not above schema_version"
        case .noTables: "tables must not be empty"
        case .duplicateTable(let t): "table \(t) is listed more than once"
        case .unknownComposition(let t): "table \(t): composition must be single_scope or multi_scope"
        case .noFields(let t): "table \(t) has no fields"
        case .duplicateField(let t, let f): "table \(t): field \(f) is listed more than once"
        case .unknownType(let t, let f): "table \(t), field \(f): type is not one of the eleven portable types"
        case .decimalPrecisionScaleMissing(let t, let f): "table \(t), field \(f): decimal needs precision and scale"
        case .precisionScaleOnNonDecimal(let t, let f):
            "table \(t), field \(f): precision and scale are allowed only on decimal fields"
        case .precisionOutOfRange(let t, let f): "table \(t), field \(f): precision must be a positive integer"
        case .scaleOutOfRange(let t, let f): "table \(t), field \(f): scale must be an integer in 0...precision"
        case .primaryKeyFieldMissing(let t): "table \(t): primary_key_field_id names no field of the table"
        case .primaryKeyType(let t): "table \(t): the primary key must be of type string, int or int64"
        case .primaryKeyNullable(let t): "table \(t): the primary key must not be nullable"
        case .primaryKeyWritable(let t): "table \(t): the primary key must not be writable"
        case .lifecycleFieldMissing(let t, let m): "table \(t): lifecycle \(m) names no field of the table"
        case .lifecycleFieldNotDatetime(let t, let m): "table \(t): lifecycle \(m) must name a datetime field"
        case .lifecycleFieldWritable(let t, let m): "table \(t): lifecycle \(m) must name a non-writable field"
        case .duplicateIndex(let t, let i): "table \(t): index \(i) is listed more than once"
        case .indexWithoutFields(let t, let i): "table \(t): index \(i) has no field_ids"
        case .indexUnknownField(let t, let i, let f): "table \(t): index \(i) names unknown field \(f)"
        case .noncharacter: "manifest contains a Unicode noncharacter, which has no RFC 8785 form"
        case .hashMismatch(let declared, let computed): "schema_hash is \(declared) but the body hashes to \(computed)"
        }
    }
}
