/// What the audit recomputed for one scope from its provenance edges and the re-digested rows.
struct ScopeTally: Sendable {
    /// Number of edges of the scope.
    var edges = 0
    /// The recomputed scope digest; nil when an edge's row could not be digested (already reported).
    var digest: [UInt8]?
}

/// The outcome of a row audit.
struct RowAuditResult: Sendable {
    /// Materialized rows read.
    var rows = 0
    /// Per scope named by an edge.
    var scopes: [String: ScopeTally] = [:]
    /// How many findings of each of the audit's checks it recorded.
    var issues: [SeedCheck: Int] = [:]
}
