import SynchroProtocol

/// The conflict codes of the row-state matrix (`spec/wire-protocol.md` §4.4).
enum PushConflictCode: String {
    case versionConflict = "version_conflict"
    case rowAlreadyExists = "row_already_exists"
    case rowDeleted = "row_deleted"
    case rowNotFound = "row_not_found"

    /// Bounded text for people; clients branch on the code only.
    var message: String {
        switch self {
        case .versionConflict: "row version differs from base_version"
        case .rowAlreadyExists: "row already exists"
        case .rowDeleted: "row is deleted"
        case .rowNotFound: "row does not exist"
        }
    }
}

/// The terminal codes of `rejected_terminal` outcomes (`spec/wire-protocol.md` §4.4).
enum PushTerminalCode: String {
    case schemaIncompatible = "schema_incompatible"
    case tableNotSynced = "table_not_synced"
    case policyRejected = "policy_rejected"
    case validationFailed = "validation_failed"
    case atomicBatchRejected = "atomic_batch_rejected"
}

/// The server's state of one row as a conflict or an applied outcome reports it: the row (live row
/// or source tombstone) with its checksum, or only the version of a fence-only delete.
struct ReportedRowState {
    let serverVersion: String
    /// The complete row and its digest under the outcome schema; nil for a fence-only delete.
    let row: (json: JSONValue, checksum: Checksum)?
}

/// One mutation's outcome exactly as the response lists it and the ledger stores it: the RFC 8785
/// octets of the outcome object, which an exact replay or a cross-batch reuse sends unchanged.
struct PushOutcome {
    enum Status: String {
        case applied
        case conflict
        case rejectedTerminal = "rejected_terminal"
    }

    let status: Status
    /// True only for `atomic_batch_rejected`, which a non-atomic batch may never reuse (§4.5).
    let isAtomicRejected: Bool
    /// Canonical octets of the outcome object.
    let bytes: [UInt8]

    /// Applied outcomes go to `accepted`, every other one to `rejected`.
    var isAccepted: Bool { status == .applied }

    private init(status: Status, isAtomicRejected: Bool = false, members: [JSONMember]) throws {
        self.status = status
        self.isAtomicRejected = isAtomicRejected
        bytes = try CanonicalJSON.encode(.object(JSONObject(members)))
    }

    /// A stored outcome, read back from the ledger for a cross-batch reuse (§4.6).
    init(stored bytes: [UInt8], isAtomicRejected: Bool) throws {
        let status = try StrictJSONParser().parse(bytes).objectValue?["status"]?.stringValue
        guard let status, let parsed = Status(rawValue: status) else { throw PushIntegrityError.storedOutcome }
        self.status = parsed
        self.isAtomicRejected = isAtomicRejected
        self.bytes = bytes
    }

    /// `applied`: the new version always; the row and checksum when the row exists after the unit.
    static func applied(_ mutation: PushMutation, schema: SchemaReference, state: ReportedRowState) throws
        -> PushOutcome
    {
        var members = header(mutation, schema: schema) + [JSONMember("status", .string(Status.applied.rawValue))]
        members += stateMembers(state)
        return try PushOutcome(status: .applied, members: members)
    }

    /// `conflict` with the current state: row, checksum and version for a live row or tombstone,
    /// the version only for a fence, nothing for true absence.
    static func conflict(
        _ mutation: PushMutation, schema: SchemaReference, code: PushConflictCode, state: ReportedRowState?
    ) throws -> PushOutcome {
        var members = header(mutation, schema: schema) + [
            JSONMember("status", .string(Status.conflict.rawValue)),
            JSONMember("code", .string(code.rawValue)),
            JSONMember("message", .string(code.message)),
        ]
        if let state { members += stateMembers(state) }
        return try PushOutcome(status: .conflict, members: members)
    }

    /// `rejected_terminal` without row, checksum or version.
    static func terminal(
        _ mutation: PushMutation, schema: SchemaReference, code: PushTerminalCode, message: String
    ) throws -> PushOutcome {
        let members = header(mutation, schema: schema) + [
            JSONMember("status", .string(Status.rejectedTerminal.rawValue)),
            JSONMember("code", .string(code.rawValue)),
            JSONMember("message", .string(message)),
        ]
        return try PushOutcome(
            status: .rejectedTerminal, isAtomicRejected: code == .atomicBatchRejected, members: members)
    }

    /// `schema_incompatible`, classified under the current schema: `retryable: false`, both schema
    /// references and the incompatible authored field IDs in byte order (no values).
    static func schemaIncompatible(
        _ mutation: PushMutation, current: SchemaReference, fieldIDs: [String]
    ) throws -> PushOutcome {
        let members = header(mutation, schema: current) + [
            JSONMember("status", .string(Status.rejectedTerminal.rawValue)),
            JSONMember("code", .string(PushTerminalCode.schemaIncompatible.rawValue)),
            JSONMember("message", .string("authored fields are not representable in the current schema")),
            JSONMember("retryable", .bool(false)),
            JSONMember("authored_schema", mutation.authoredSchema.json),
            JSONMember("current_schema", current.json),
            JSONMember("incompatible_field_ids", .array(fieldIDs.byteOrdered().map(JSONValue.string))),
        ]
        return try PushOutcome(status: .rejectedTerminal, members: members)
    }

    /// Every non-failing member of a failed atomic batch, under the request schema (§4.5).
    static func atomicRejected(_ mutation: PushMutation, requestSchema: SchemaReference) throws -> PushOutcome {
        try terminal(mutation, schema: requestSchema, code: .atomicBatchRejected, message: "atomic batch rejected")
    }

    private static func header(_ mutation: PushMutation, schema: SchemaReference) -> [JSONMember] {
        [
            JSONMember("mutation_id", .string(mutation.mutationID)),
            JSONMember("table", .string(mutation.table)),
            JSONMember("pk", .object(JSONObject([JSONMember(mutation.pkFieldID, mutation.pkValue)]))),
            JSONMember("outcome_schema", schema.json),
        ]
    }

    private static func stateMembers(_ state: ReportedRowState) -> [JSONMember] {
        var members: [JSONMember] = []
        if let row = state.row {
            members.append(JSONMember("server_row", row.json))
            members.append(JSONMember("row_checksum", row.checksum.json))
        }
        members.append(JSONMember("server_version", .string(state.serverVersion)))
        return members
    }
}

/// Durable state the server itself wrote does not fit the protocol: answered with 500
/// `sync_integrity_failure`, never with row values.
enum PushIntegrityError: Error, CustomStringConvertible {
    /// A ledger outcome is not an outcome object.
    case storedOutcome
    /// A stored source row is not a complete valid row of the current manifest.
    case storedRow
    /// The client record that passed the generation gate vanished within the request.
    case missingClient

    var description: String {
        switch self {
        case .storedOutcome: "a stored push outcome is malformed"
        case .storedRow: "a stored source row does not fit the current manifest"
        case .missingClient: "the pushing client has no record"
        }
    }
}
