import SQLiteKit
import SynchroProtocol
import SystemKit

/// Why an export stopped. Every case names the rule and where it broke (scope, page ordinal, table) and
/// never a credential, token, receipt or row value. Nothing is published after any of them.
public enum SeedExportError: Error, Sendable, CustomStringConvertible {
    /// The source cannot be used as given (URL, options).
    case invalidSource(reason: String)
    /// The request to the source got no usable answer; `reason` names the kind and the URL (never its query, a
    /// header or a credential), `rule` the kind (`connection_refused`, `dns_failure`, `tls_failure`, `timeout`, …),
    /// and `retriesExhausted` whether it was retried until the attempts ran out (exit status 4).
    case transport(route: String, reason: String, rule: String = "transport_failed", retriesExhausted: Bool = false)
    /// The source answered with a non-200 status (`code`: the wire error code, when present).
    case refused(route: String, status: Int, code: String?)
    /// A database source failed the call at `route` (a function name): connection, privilege, interface,
    /// serialization or a refusal by the function.
    case database(route: String, failure: SeedDatabaseFailure)
    /// A response is not strict JSON.
    case malformedJSON(route: String, rule: String, offset: Int)
    /// The schema manifest is invalid, or unsupported for portable seeds.
    case schemaManifest(rule: String)
    /// The export manifest broke a rule (members, ordering, recomputed export manifest hash).
    case exportManifest(SeedExportManifestError)
    /// The export manifest is bound to another schema than the schema manifest.
    case schemaMismatch
    /// `--scopes` named a scope the server does not declare portable.
    case scopeNotPortable(String)
    /// A page broke a binding or shape rule.
    case page(scope: String, ordinal: Int64, rule: String)
    /// A record broke a rule (unknown table, field set, typed value, pk, digest mismatch, order).
    case record(scope: String, ordinal: Int64, table: String?, rule: String)
    /// The observed row count differs from the manifest's cardinality.
    case cardinality(scope: String, expected: Int64, observed: Int64)
    /// The recomputed scope digest differs from the manifest checksum.
    case scopeDigest(scope: String)
    /// A continuation receipt or page token does not decode or does not match the export.
    case token(scope: String, rule: String)
    /// The output path cannot be published (exists, sidecar present, directory missing).
    case output(rule: String, path: String)
    /// SQLite failed while writing the seed.
    case storage(String)
    /// A file operation failed.
    case io(operation: String, path: String, errno: Int32)
    /// The written seed failed its publication verification.
    case verification(checks: [String])
    /// The caller asked the export to stop (SIGINT or SIGTERM): a source wrapper throws it at the next page, and the
    /// exporter abandons its scratch file as for any other failure.
    case interrupted

    /// The stable snake_case rule name.
    public var rule: String {
        switch self {
        case .invalidSource: "invalid_source"
        case .transport(_, _, let rule, _): rule
        case .refused(_, _, let code): code ?? "source_refused"
        case .database(_, let failure): failure.rule
        case .malformedJSON(_, let rule, _): rule
        case .schemaManifest(let rule): rule
        case .exportManifest(let error): error.rule
        case .schemaMismatch: "schema_mismatch"
        case .scopeNotPortable: "scope_not_portable"
        case .page(_, _, let rule): rule
        case .record(_, _, _, let rule): rule
        case .cardinality: "cardinality_mismatch"
        case .scopeDigest: "scope_digest_mismatch"
        case .token(_, let rule): rule
        case .output(let rule, _): rule
        case .storage: "storage_failed"
        case .io: "io_failed"
        case .verification: "verification_failed"
        case .interrupted: "interrupted"
        }
    }

    public var description: String {
        switch self {
        case .invalidSource(let reason): "invalid source: \(reason)"
        case .transport(let route, let reason, _, _): "\(route): \(reason)"
        case .refused(let route, let status, let code): "\(route): the source answered \(status)\(code.map { " \($0)" } ?? "")"
        case .database(let route, let failure): "\(route): \(failure)"
        case .malformedJSON(let route, let rule, let offset): "\(route): not strict JSON (\(rule) at octet \(offset))"
        case .schemaManifest(let rule): "schema manifest: \(rule)"
        case .exportManifest(let error): "\(error)"
        case .schemaMismatch: "the export manifest names another schema than the schema manifest"
        case .scopeNotPortable(let scope): "scope \(scope) is not in the server's portable set"
        case .page(let scope, let ordinal, let rule): "scope \(scope), page at row \(ordinal): \(rule)"
        case .record(let scope, let ordinal, let table, let rule):
            "scope \(scope), row \(ordinal)\(table.map { " (table \($0))" } ?? ""): \(rule)"
        case .cardinality(let scope, let expected, let observed):
            "scope \(scope): \(observed) rows exported, the manifest declares \(expected)"
        case .scopeDigest(let scope): "scope \(scope): the recomputed scope digest differs from the manifest checksum"
        case .token(let scope, let rule): "scope \(scope): \(rule)"
        case .output(let rule, let path): "\(path): \(rule)"
        case .storage(let message): "writing the seed failed: \(message)"
        case .io(let operation, let path, let code):
            SystemError(operation: operation, path: path, code: code).description
        case .verification(let checks): "the written seed failed verification: \(checks.joined(separator: ", "))"
        case .interrupted: "interrupted"
        }
    }
}
