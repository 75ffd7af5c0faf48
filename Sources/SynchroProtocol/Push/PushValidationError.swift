/// Why a push request or a lone mutation is structurally invalid (`spec/integrity.md` §3.4, §5.1;
/// `spec/wire-protocol.md` §4.1–§4.2). A server answers every case with 400 `invalid_request`.
///
/// Each case is one rule; ``rule`` is its stable snake_case name for reports. `mutationIndex` is the
/// zero-based position in `mutations` (nil for a lone mutation or an envelope rule). Descriptions
/// name the rule, member names of the protocol, counts and sizes only — never a submitted value.
public enum PushValidationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The request body exceeds 1,048,576 octets.
    case requestBodyTooLarge(octets: Int)
    /// The input is not JSON (malformed, invalid UTF-8, lone surrogate, trailing content, too deep).
    case invalidJSON(JSONParseError)
    /// An object has the same member name twice (after unescaping), at any depth.
    case duplicateMember(offset: Int)
    /// A submitted value has no RFC 8785 form: a noncharacter or a number outside finite binary64.
    case valueNotIJSON(mutationIndex: Int?)
    /// The RFC 8785 form of the body exceeds 1,048,576 octets.
    case canonicalRequestTooLarge(octets: Int)
    /// The request body is not a JSON object.
    case requestNotObject
    /// A required member is absent (the name is the protocol's member name for the input shape).
    case missingMember(String, mutationIndex: Int?)
    /// A member outside the exact member set is present.
    case unknownMember(mutationIndex: Int?)
    /// `client_id` is not a nonempty, I-JSON-clean string.
    case invalidClientID
    /// `client_generation` is not a plain integer literal in 1…2^53−1.
    case invalidClientGeneration
    /// `batch_id` is not a canonical lowercase non-nil UUID.
    case invalidBatchID
    /// A schema reference (`schema`, `request_schema` or `authored_schema`) is malformed.
    case invalidSchemaReference(member: String, mutationIndex: Int?)
    /// `atomic` is present with a value other than `true`.
    case invalidAtomic
    /// `mutations` is not an array.
    case mutationsNotArray
    /// `mutations` is empty.
    case noMutations
    /// `mutations` has more than 1000 elements.
    case tooManyMutations(count: Int)
    /// An element of `mutations` (or a lone mutation) is not an object.
    case mutationNotObject(mutationIndex: Int?)
    /// `mutation_id` is not a canonical lowercase non-nil UUID.
    case invalidMutationID(mutationIndex: Int?)
    /// The table ID is not a nonempty, I-JSON-clean string.
    case invalidTable(mutationIndex: Int?)
    /// `pk` does not have exactly one key member with a nonempty, I-JSON-clean field ID.
    case invalidPrimaryKey(mutationIndex: Int?)
    /// The primary-key value is JSON `null`.
    case nullPrimaryKey(mutationIndex: Int?)
    /// The operation is not exactly `insert`, `update` or `delete`.
    case invalidOperation(mutationIndex: Int?)
    /// `client_version` is not `YYYY-MM-DDTHH:MM:SS.ffffffZ` with a valid date and time.
    case invalidClientVersion(mutationIndex: Int?)
    /// An insert carries `base_version` (even `null`).
    case baseVersionForbidden(mutationIndex: Int?)
    /// An update or delete lacks `base_version`.
    case missingBaseVersion(mutationIndex: Int?)
    /// `base_version` is present but not a nonempty string (`null` included).
    case invalidBaseVersion(mutationIndex: Int?)
    /// An insert or update lacks `columns`.
    case missingColumns(mutationIndex: Int?)
    /// A delete carries `columns` (even `null`).
    case columnsForbidden(mutationIndex: Int?)
    /// `columns` has the wrong JSON type or, in the vector shape, an element is not an exact
    /// `{field_id, value}` pair.
    case invalidColumns(mutationIndex: Int?)
    /// An update authors no column.
    case emptyUpdateColumns(mutationIndex: Int?)
    /// A column field ID is empty or not I-JSON clean.
    case invalidFieldID(mutationIndex: Int?)
    /// The same field ID is authored twice.
    case duplicateColumn(mutationIndex: Int?)
    /// More than 256 authored columns.
    case tooManyColumns(count: Int, mutationIndex: Int?)
    /// The RFC 8785 form of the normalized mutation exceeds 65,536 octets.
    case normalizedMutationTooLarge(octets: Int, mutationIndex: Int?)
    /// A `mutation_id` repeats an earlier one in the same request.
    case duplicateMutationID(mutationIndex: Int?)
    /// In an atomic request, a mutation addresses the same row as an earlier one.
    case duplicateAtomicRow(mutationIndex: Int?)
    /// The authenticated user ID supplied for fingerprinting is empty or not I-JSON clean.
    case invalidAuthenticatedUserID

    /// The stable snake_case name of the broken rule.
    public var rule: String {
        switch self {
        case .requestBodyTooLarge: "request_body_too_large"
        case .invalidJSON: "invalid_json"
        case .duplicateMember: "duplicate_member"
        case .valueNotIJSON: "value_not_i_json"
        case .canonicalRequestTooLarge: "canonical_request_too_large"
        case .requestNotObject: "request_not_object"
        case .missingMember: "missing_member"
        case .unknownMember: "unknown_member"
        case .invalidClientID: "invalid_client_id"
        case .invalidClientGeneration: "invalid_client_generation"
        case .invalidBatchID: "invalid_batch_id"
        case .invalidSchemaReference: "invalid_schema_reference"
        case .invalidAtomic: "invalid_atomic"
        case .mutationsNotArray: "mutations_not_array"
        case .noMutations: "no_mutations"
        case .tooManyMutations: "too_many_mutations"
        case .mutationNotObject: "mutation_not_object"
        case .invalidMutationID: "invalid_mutation_id"
        case .invalidTable: "invalid_table"
        case .invalidPrimaryKey: "invalid_pk"
        case .nullPrimaryKey: "null_pk"
        case .invalidOperation: "invalid_operation"
        case .invalidClientVersion: "invalid_client_version"
        case .baseVersionForbidden: "base_version_forbidden"
        case .missingBaseVersion: "missing_base_version"
        case .invalidBaseVersion: "invalid_base_version"
        case .missingColumns: "missing_columns"
        case .columnsForbidden: "columns_forbidden"
        case .invalidColumns: "invalid_columns"
        case .emptyUpdateColumns: "empty_update_columns"
        case .invalidFieldID: "invalid_field_id"
        case .duplicateColumn: "duplicate_column"
        case .tooManyColumns: "too_many_columns"
        case .normalizedMutationTooLarge: "normalized_mutation_too_large"
        case .duplicateMutationID: "duplicate_mutation_id"
        case .duplicateAtomicRow: "duplicate_atomic_row"
        case .invalidAuthenticatedUserID: "invalid_authenticated_user_id"
        }
    }

    /// The zero-based index of the offending mutation, when the rule concerns one inside a request.
    public var mutationIndex: Int? {
        switch self {
        case .valueNotIJSON(let i), .missingMember(_, let i), .unknownMember(let i),
            .invalidSchemaReference(_, let i), .mutationNotObject(let i), .invalidMutationID(let i),
            .invalidTable(let i), .invalidPrimaryKey(let i), .nullPrimaryKey(let i), .invalidOperation(let i),
            .invalidClientVersion(let i), .baseVersionForbidden(let i), .missingBaseVersion(let i),
            .invalidBaseVersion(let i), .missingColumns(let i), .columnsForbidden(let i), .invalidColumns(let i),
            .emptyUpdateColumns(let i), .invalidFieldID(let i), .duplicateColumn(let i),
            .tooManyColumns(_, let i), .normalizedMutationTooLarge(_, let i), .duplicateMutationID(let i),
            .duplicateAtomicRow(let i):
            i
        default:
            nil
        }
    }

    public var description: String {
        let location = mutationIndex.map { " (mutation \($0))" } ?? ""
        return "invalid push request: \(rule)\(location): \(explanation)"
    }

    private var explanation: String {
        switch self {
        case .requestBodyTooLarge(let octets):
            "the body is \(octets) octets, more than \(PushLimits.maxRequestBodyOctets)"
        case .invalidJSON(let error): error.description
        case .duplicateMember(let offset): "an object repeats a member name (object at byte \(offset))"
        case .valueNotIJSON: "a value contains a Unicode noncharacter or a number outside finite binary64"
        case .canonicalRequestTooLarge(let octets):
            "the RFC 8785 form is \(octets) octets, more than \(PushLimits.maxCanonicalRequestOctets)"
        case .requestNotObject: "the body is not a JSON object"
        case .missingMember(let name, _): "required member \(name) is absent"
        case .unknownMember: "an object has a member outside its exact member set"
        case .invalidClientID: "client_id must be a nonempty string without noncharacters"
        case .invalidClientGeneration: "client_generation must be a plain integer in 1...9007199254740991"
        case .invalidBatchID: "batch_id must be a canonical lowercase non-nil UUID"
        case .invalidSchemaReference(let member, _):
            "\(member) must be {version: 1...9007199254740991, hash: 64 lowercase hex}"
        case .invalidAtomic: "atomic may only be true"
        case .mutationsNotArray: "mutations must be an array"
        case .noMutations: "mutations must not be empty"
        case .tooManyMutations(let count):
            "mutations has \(count) elements, more than \(PushLimits.maxMutationsPerRequest)"
        case .mutationNotObject: "a mutation must be a JSON object"
        case .invalidMutationID: "mutation_id must be a canonical lowercase non-nil UUID"
        case .invalidTable: "the table ID must be a nonempty string without noncharacters"
        case .invalidPrimaryKey: "pk must name exactly one nonempty key field"
        case .nullPrimaryKey: "the pk value must not be null"
        case .invalidOperation: "the operation must be insert, update or delete"
        case .invalidClientVersion: "client_version must be YYYY-MM-DDTHH:MM:SS.ffffffZ"
        case .baseVersionForbidden: "an insert must not carry base_version"
        case .missingBaseVersion: "an update or delete requires base_version"
        case .invalidBaseVersion: "base_version must be a nonempty string"
        case .missingColumns: "an insert or update requires columns"
        case .columnsForbidden: "a delete must not carry columns"
        case .invalidColumns: "columns has the wrong shape for the input form"
        case .emptyUpdateColumns: "an update must author at least one column"
        case .invalidFieldID: "a field ID must be a nonempty string without noncharacters"
        case .duplicateColumn: "a field ID is authored twice"
        case .tooManyColumns(let count, _):
            "\(count) authored columns, more than \(PushLimits.maxAuthoredColumns)"
        case .normalizedMutationTooLarge(let octets, _):
            "the normalized mutation is \(octets) octets, more than \(PushLimits.maxNormalizedMutationOctets)"
        case .duplicateMutationID: "a mutation_id occurs twice in the request"
        case .duplicateAtomicRow: "an atomic request addresses the same row twice"
        case .invalidAuthenticatedUserID: "the authenticated user ID must be nonempty without noncharacters"
        }
    }
}

extension PushValidationError {
    /// Maps a parser failure, keeping duplicate members as their own rule.
    init(_ error: JSONParseError) {
        self = error.rule == .duplicateMember ? .duplicateMember(offset: error.offset) : .invalidJSON(error)
    }
}
