import SynchroProtocol

/// Why a pipeline file was refused (docs/pipelines.md, "Validation"). Every case names the member by its path
/// (`source.embedded.rows`, `steps[2]`; the empty path is the document itself) and the rule it broke; none
/// carries a member's value, so a credential pasted into the wrong member is never echoed.
public enum PipelineDefinitionError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file cannot be read.
    case unreadableFile(path: String)
    /// The file is not strict JSON (duplicate members included).
    case malformedJSON(JSONParseError)
    /// A member the format does not define.
    case unknownMember(member: String)
    /// A member of the wrong JSON type; `expected` names the type.
    case wrongType(member: String, expected: String)
    /// A required member is absent.
    case missingMember(member: String)
    /// Members that exclude each other are both present (`source` takes exactly one of `embedded`, `server`).
    case conflictingMembers(member: String, names: [String])
    /// The environment variable a `*_env` member names is not set, or empty.
    case missingEnvironmentVariable(member: String, variable: String)
    /// A number outside its range; `range` says which.
    case outOfRange(member: String, range: String)
    /// A value of the right type that breaks the member's rule; `reason` says which rule.
    case invalidValue(member: String, reason: String)
    /// A list repeats an entry.
    case duplicateValue(member: String)
    /// `step` is listed without the step it needs.
    case stepRequires(member: String, step: PipelineStep, requires: PipelineStep)

    /// The stable snake_case rule name.
    public var rule: String {
        switch self {
        case .unreadableFile: "unreadable_file"
        case .malformedJSON: "malformed_json"
        case .unknownMember: "unknown_member"
        case .wrongType: "wrong_type"
        case .missingMember: "missing_member"
        case .conflictingMembers: "conflicting_members"
        case .missingEnvironmentVariable: "missing_environment_variable"
        case .outOfRange: "out_of_range"
        case .invalidValue: "invalid_value"
        case .duplicateValue: "duplicate_value"
        case .stepRequires: "step_requires"
        }
    }

    /// The member path the rule is about; nil for file-level errors.
    public var member: String? {
        switch self {
        case .unreadableFile, .malformedJSON: nil
        case .unknownMember(let member), .wrongType(let member, _), .missingMember(let member),
            .conflictingMembers(let member, _), .missingEnvironmentVariable(let member, _),
            .outOfRange(let member, _), .invalidValue(let member, _), .duplicateValue(let member),
            .stepRequires(let member, _, _):
            member
        }
    }

    /// What is wrong, in words.
    public var message: String {
        switch self {
        case .unreadableFile(let path): "cannot read \(path)"
        case .malformedJSON(let error): "not strict JSON: \(error.rule.rawValue) at byte \(error.offset)"
        case .unknownMember: "not a member of the pipeline format"
        case .wrongType(_, let expected): "must be \(expected)"
        case .missingMember: "required"
        case .conflictingMembers(_, let names): "exactly one of \(names.joined(separator: ", ")) may be given"
        case .missingEnvironmentVariable(_, let variable): "the environment variable \(variable) is not set or empty"
        case .outOfRange(_, let range): "must be \(range)"
        case .invalidValue(_, let reason): reason
        case .duplicateValue: "listed more than once"
        case .stepRequires(_, let step, let requires): "\(step.rawValue) needs \(requires.rawValue) in the steps"
        }
    }

    /// `member: message (rule)`.
    public var description: String {
        let place = member.map { $0.isEmpty ? "the document" : $0 } ?? "pipeline file"
        return "\(place): \(message) (\(rule))"
    }
}
