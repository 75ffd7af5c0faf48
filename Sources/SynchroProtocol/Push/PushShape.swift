/// The two JSON spellings of a push request (`spec/integrity.md` §0): what clients send and what
/// the upstream conformance vectors use. Both normalize to the same arrays and fingerprints.
public enum PushShape: String, Sendable, Hashable, CaseIterable {
    /// The push wire: `table`, `op`, `pk` as a one-member object, `columns` as an object, `schema`.
    case wire
    /// The vector input: `table_id`, `operation`, `pk` as `{field_id, value}`, `columns` as an array
    /// of `{field_id, value}` pairs, `request_schema`.
    case conformanceVector = "conformance_vector"

    /// Member name of the logical table ID.
    var tableMember: String { self == .wire ? "table" : "table_id" }

    /// Member name of the operation.
    var operationMember: String { self == .wire ? "op" : "operation" }

    /// Member name of the request schema reference in the envelope.
    var schemaMember: String { self == .wire ? "schema" : "request_schema" }

    /// Envelope members in the order they are checked for presence; `atomic` is optional.
    var requiredEnvelopeMembers: [String] {
        ["client_id", "client_generation", "batch_id", schemaMember, "mutations"]
    }

    var allowedEnvelopeMembers: [String] { requiredEnvelopeMembers + ["atomic"] }

    /// Mutation members that must be present whatever the operation.
    var requiredMutationMembers: [String] {
        ["mutation_id", tableMember, "pk", "authored_schema", operationMember, "client_version"]
    }

    var allowedMutationMembers: [String] { requiredMutationMembers + ["base_version", "columns"] }
}

/// Exact-object reading shared by the envelope and mutation parsers: every member must be one of
/// the allowed names (compared by exact scalars, never by Swift's canonical equivalence).
struct PushMemberReader {
    let object: JSONObject

    /// The first required name that is absent, if any.
    func firstMissing(_ required: [String]) -> String? {
        required.first { object[$0] == nil }
    }

    /// True when some member is not among `allowed`.
    func hasUnknownMember(allowed: [String]) -> Bool {
        object.members.contains { member in !allowed.contains { member.key.exactlyEquals($0) } }
    }

    subscript(name: String) -> JSONValue? { object[name] }
}

extension String {
    /// Nonempty and free of Unicode noncharacters: the I-JSON rule for identity strings
    /// (`spec/integrity.md` §3.4). Swift strings cannot hold lone surrogates.
    var isCleanPushIdentity: Bool {
        !isEmpty && !Unicode.containsNoncharacter(self)
    }
}
