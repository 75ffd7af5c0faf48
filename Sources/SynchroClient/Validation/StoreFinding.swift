import SynchroStore
/// One failed check of a client store's validation (``StoreValidator``). Cases name the rule, the scope and the
/// table; never a key, value, cursor, checksum or token.
public enum StoreFinding: Sendable, Equatable, CustomStringConvertible {
    /// `PRAGMA integrity_check` reported damage (`problems` lines).
    case integrityCheck(problems: Int)
    /// `PRAGMA foreign_key_check` reported rows of `table` without their parent.
    case foreignKeyViolation(table: String)
    /// The file is not in the current layout (unknown, newer, or not migrated yet); nothing else was checked.
    case layout(rule: String)
    /// A transient capture or grouping state was committed (`sync_lock`, `atomic_group_id`, capture context).
    case captureState(rule: String)
    /// The schema metadata disagrees with itself, with the archive or with the physical synced tables.
    case schemaMetadata(rule: String)
    /// The client identity or assignment metadata is incomplete (`client_generation`, `client_server_id`).
    case clientMetadata(rule: String)
    /// A scope's metadata breaks a rule (cursor without checksum, attempt beside a cursor, orphan provenance).
    case scopeMetadata(scope: String, rule: String)
    /// Rows of `table` in `scope` no longer yield their stored row digest.
    case rowDigestMismatch(scope: String, table: String, rows: Int)
    /// Provenance edges of `scope` whose row or server version is missing from `table`.
    case rowMissing(scope: String, table: String, rows: Int)
    /// The scope digest recomputed from local rows differs from the stored verified checksum.
    case scopeDigestMismatch(scope: String)
    /// The sealed batches or the ledger break a queue rule.
    case queue(rule: String)
    /// The server's terminal checksum of an unchanged scope differs from the stored one.
    case serverChecksumMismatch(scope: String)
    /// The server comparison could not run (`rule`: `not_connected`, `http`, `contract.…`, or a network kind such as
    /// `connection_refused` with `detail` naming the URL).
    case serverComparisonFailed(rule: String, detail: String? = nil)

    /// Stable snake_case name of the rule.
    public var rule: String {
        switch self {
        case .integrityCheck: "integrity_check"
        case .foreignKeyViolation: "foreign_key_violation"
        case .layout(let rule): "layout.\(rule)"
        case .captureState(let rule): "capture_state.\(rule)"
        case .schemaMetadata(let rule): "schema_metadata.\(rule)"
        case .clientMetadata(let rule): "client_metadata.\(rule)"
        case .scopeMetadata(_, let rule): "scope_metadata.\(rule)"
        case .rowDigestMismatch: "row_digest_mismatch"
        case .rowMissing: "row_missing"
        case .scopeDigestMismatch: "scope_digest_mismatch"
        case .queue(let rule): "queue.\(rule)"
        case .serverChecksumMismatch: "server_checksum_mismatch"
        case .serverComparisonFailed(let rule, _): "server_comparison_failed.\(rule)"
        }
    }

    /// The scope the finding is about, if any.
    public var scope: String? {
        switch self {
        case .scopeMetadata(let scope, _), .rowDigestMismatch(let scope, _, _), .rowMissing(let scope, _, _),
             .scopeDigestMismatch(let scope), .serverChecksumMismatch(let scope):
            scope
        default: nil
        }
    }

    /// The synced table the finding is about, if any.
    public var table: String? {
        switch self {
        case .foreignKeyViolation(let table), .rowDigestMismatch(_, let table, _), .rowMissing(_, let table, _):
            table
        default: nil
        }
    }

    public var description: String {
        switch self {
        case .integrityCheck(let problems): "PRAGMA integrity_check reported \(problems) problem(s)"
        case .foreignKeyViolation(let table): "table \(table) has rows without their foreign-key parent"
        case .layout(let rule): "the file is not in the current client layout (\(rule))"
        case .captureState(let rule): "a transient capture state was committed (\(rule))"
        case .schemaMetadata(let rule): "the schema metadata is inconsistent (\(rule))"
        case .clientMetadata(let rule): "the client metadata is inconsistent (\(rule))"
        case .scopeMetadata(let scope, let rule): "scope \(scope): metadata breaks \(rule)"
        case .rowDigestMismatch(let scope, let table, let rows):
            "scope \(scope): \(rows) row(s) of \(table) no longer match their stored row digest"
        case .rowMissing(let scope, let table, let rows):
            "scope \(scope): \(rows) row(s) of \(table) named by provenance are missing"
        case .scopeDigestMismatch(let scope):
            "scope \(scope): the digest recomputed from local rows differs from the verified checksum"
        case .queue(let rule): "the push queue breaks \(rule)"
        case .serverChecksumMismatch(let scope):
            "scope \(scope): the server's checksum differs from the verified local checksum"
        case .serverComparisonFailed(let rule, let detail):
            "the comparison with the server failed (\(rule))" + (detail.map { ": \($0)" } ?? "")
        }
    }
}
