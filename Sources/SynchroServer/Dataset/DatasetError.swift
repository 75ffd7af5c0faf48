import SynchroProtocol

/// Why a dataset folder (`seeds/<name>/`, see `docs/datasets.md`) cannot be served, or why rows
/// cannot be generated from it.
///
/// Every error names the broken ``Rule``, the file it was found in and a location inside that file
/// made of member names and schema identifiers (table, field and scope IDs). It never quotes a
/// value from the file, a generated row value or a user ID.
public struct DatasetError: Error, Sendable, Equatable, CustomStringConvertible {
    /// One case per rule a dataset must satisfy; `rawValue` is the stable snake_case name.
    public enum Rule: String, Sendable, CaseIterable {
        // Files
        /// A required file is missing or unreadable.
        case fileUnreadable = "file_unreadable"
        /// A file is not one strict JSON text (duplicate member, bad UTF-8, trailing content, …).
        case malformedJSON = "malformed_json"
        /// A value that must be a JSON object is not one.
        case notAnObject = "not_an_object"
        case missingMember = "missing_member"
        case unknownMember = "unknown_member"
        /// A member has the wrong JSON type.
        case memberType = "member_type"
        /// A member has the right JSON type but an unusable value (empty name, negative count, …).
        case invalidValue = "invalid_value"

        // manifest.json
        /// The manifest breaks a rule of `spec/wire-protocol.md` §7 (see ``DatasetError/manifestError``).
        case invalidManifest = "invalid_manifest"
        /// `schema_hash` is present but differs from the hash of the manifest body.
        case schemaHashMismatch = "schema_hash_mismatch"

        // dataset.json: scopes
        /// Two shared scopes have the same ID, or two per-user declarations the same pattern.
        case duplicateScopeID = "duplicate_scope_id"
        /// An `id_pattern` does not contain `{user}` exactly once.
        case invalidIDPattern = "invalid_id_pattern"
        /// Two declarations can produce the same scope ID.
        case scopeIDConflict = "scope_id_conflict"
        /// A declaration or generator names a table the manifest does not have.
        case unknownTable = "unknown_table"
        /// A manifest table belongs to no scope declaration.
        case tableNotCovered = "table_not_covered"
        /// A table is declared both shared and per-user.
        case tableSharedAndPerUser = "table_shared_and_per_user"
        /// A table is listed by two per-user declarations.
        case perUserTableDeclaredTwice = "per_user_table_declared_twice"
        /// A `single_scope` table is listed by several shared scopes (its rows would need several edges).
        case singleScopeTableInSeveralScopes = "single_scope_table_in_several_scopes"
        /// A per-user declaration names an owner field the table does not have.
        case ownerFieldMissing = "owner_field_missing"
        /// An owner field is not a non-null `string` field.
        case ownerFieldType = "owner_field_type"

        // dataset.json: generate
        /// `users` is missing while per-user tables exist, or lists an empty or repeated user.
        case invalidUsers = "invalid_users"
        /// A manifest table has no generation entry.
        case tableGeneratorMissing = "table_generator_missing"
        /// `rows` on a per-user table, `rows_per_user` or `rows_overridable` on a shared one, or neither.
        case rowCountMismatch = "row_count_mismatch"
        /// A field without a default (every field but lifecycle fields) has no generator.
        case fieldGeneratorMissing = "field_generator_missing"
        /// A generator names a field its table does not have.
        case unknownField = "unknown_field"
        /// `kind` is not one of the generator kinds.
        case unknownGeneratorKind = "unknown_generator_kind"
        /// The generator kind cannot produce the field's portable type.
        case generatorTypeMismatch = "generator_type_mismatch"
        /// A generator's parameters are inconsistent (minimum above maximum, bad literal, …).
        case invalidGenerator = "invalid_generator"
        /// A generator's range does not fit the field's type (int32 bounds, decimal precision, …).
        case generatorOutOfRange = "generator_out_of_range"
        /// A `pick` value is not a valid value of the field's type.
        case pickValueInvalid = "pick_value_invalid"
        /// `null_ratio` above zero on a field that is not nullable.
        case nullRatioOnNonNullable = "null_ratio_on_non_nullable"
        /// A primary key's generator cannot guarantee unique keys.
        case keyGeneratorNotUnique = "key_generator_not_unique"
        /// A per-user owner field does not use the `owner` generator, or `owner` is used elsewhere.
        case ownerFieldGenerator = "owner_field_generator"
        /// A `reference` names a table that is unknown, per-user, keyed by something other than a
        /// `sequence`, or keyed by another type.
        case referenceTargetInvalid = "reference_target_invalid"

        // Generation (also checked at load with the default counts)
        /// A sequence would leave its type's range for the requested row count.
        case sequenceOverflow = "sequence_overflow"
        /// A date or datetime would leave 0000-01-01…9999-12-31 for the requested row count.
        case temporalOutOfRange = "temporal_out_of_range"
        /// A non-nullable reference points at a table that has no rows.
        case referenceTargetEmpty = "reference_target_empty"
        /// A generated value failed `PortableValue.validate` (a generator bug or an unchecked template).
        case generatedValueInvalid = "generated_value_invalid"
    }

    /// The rule that was broken.
    public let rule: Rule
    /// The file the rule applies to: `manifest.json` or `dataset.json`.
    public let file: String
    /// Where in the file, as member names and schema identifiers (`generate.tables.tbl_x.fields.fld_y`).
    public let location: String
    /// The manifest rule, for ``Rule/invalidManifest`` and ``Rule/schemaHashMismatch``.
    public let manifestError: ManifestError?

    /// An error for `rule` at `location` in `file`.
    public init(_ rule: Rule, file: String, at location: String, manifestError: ManifestError? = nil) {
        self.rule = rule
        self.file = file
        self.location = location
        self.manifestError = manifestError
    }

    public var description: String {
        var text = "\(file): \(rule.rawValue)"
        if !location.isEmpty { text += " at \(location)" }
        if let manifestError { text += " (\(manifestError.rule): \(manifestError))" }
        return text
    }

    static let manifestFile = "manifest.json"
    static let datasetFile = "dataset.json"

    /// A rule broken in `dataset.json`.
    static func dataset(_ rule: Rule, _ location: String) -> DatasetError {
        DatasetError(rule, file: datasetFile, at: location)
    }
}
