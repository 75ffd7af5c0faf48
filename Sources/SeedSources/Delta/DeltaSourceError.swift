import SeedArtifacts

/// Why a delta export stopped (docs/delta-sources.md, "Errors"). Every case names the rule it broke and where
/// (definition member, entity type and page ordinal, URL without its query) and never a credential, header
/// value, cursor or row value. Nothing is published after any of them.
public enum DeltaSourceError: Error, Sendable, CustomStringConvertible {
    /// The definition file broke `rule` at `member` (a JSON path such as `entities[1].paging.limit`).
    case definition(member: String, rule: String)
    /// A request got no usable answer: `kind` is `transport` (no response; `detail` the fixed transport text),
    /// `status` (a non-200 status; `detail` the status) or `retries_exhausted` (429/503 past the retry budget).
    /// `url` is the base URL and path, never the query (it carries the cursor).
    case http(url: String, kind: String, detail: String)
    /// A page of `entity` (its 1-based ordinal within the current pass) broke `rule`.
    case page(entity: String, page: Int, rule: String)
    /// Writing, verifying or publishing the seed failed (the output checks and file operations of every export).
    case output(SeedExportError)
    /// The written seed failed its own verification before publication.
    case verification(checks: [String])
    /// The database a warm or rehearsal works on broke `rule` (not a delta seed, a layout that does not match the
    /// definition, no checkpoint); `detail` names the entity type or file, never a value.
    case database(rule: String, detail: String)

    /// The stable snake_case rule name.
    public var rule: String {
        switch self {
        case .definition(_, let rule): rule
        case .http(_, let kind, _): kind == "status" ? "http_status" : kind == "transport" ? "http_transport" : kind
        case .page(_, _, let rule): rule
        case .output(let error): error.rule
        case .verification: "verification_failed"
        case .database(let rule, _): rule
        }
    }

    public var description: String {
        switch self {
        case .definition(let member, let rule): "delta source definition: \(member): \(rule)"
        case .http(let url, let kind, let detail): "\(url): \(kind) (\(detail))"
        case .page(let entity, let page, let rule): "entity \(entity), page \(page): \(rule)"
        case .output(let error): "\(error)"
        case .verification(let checks): "the written delta seed failed verification: \(checks.joined(separator: ", "))"
        case .database(let rule, let detail): "\(detail): \(rule)"
        }
    }

    /// Failures of the input rather than of the source or the file system (exit status 2).
    public var isInputError: Bool {
        switch self {
        case .definition: true
        case .output(let error): if case .output = error { true } else { false }
        default: false
        }
    }
}
