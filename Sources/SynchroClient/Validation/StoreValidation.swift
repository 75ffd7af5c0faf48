import SynchroStore
/// What validating a client store found (``StoreValidator``): the findings (empty when every check held), each
/// scope's verification, and durable states that are not damage but tell an operator what the next sync does.
/// Nothing in it is a cursor, checksum, token, key or row value.
public struct StoreValidation: Sendable, Equatable {
    /// How a scope's stored checksum compares with the server's (online validation only).
    public enum ServerComparison: String, Sendable, CaseIterable {
        /// The server's terminal checksum equals the stored verified checksum.
        case matches
        /// The scope had no change since its cursor and the server's checksum differs (also a finding).
        case mismatch
        /// The server has changes after the stored cursor: the local scope is behind, not damaged.
        case behind
        /// The server asked for a rebuild of the scope.
        case rebuildRequested = "rebuild_requested"
        /// The server no longer assigns the scope.
        case unassigned
        /// Not compared: no local cursor or checksum, or the page was not terminal.
        case notCompared = "not_compared"
    }

    /// What the offline check could say about a scope's stored checksum.
    public enum Digest: String, Sendable, CaseIterable {
        /// The digest recomputed from the local rows equals the stored verified checksum.
        case verified
        /// It differs (also a finding).
        case mismatch
        /// Rows an accepted push changed await their pull echo, or rows with pending local intent keep digests
        /// verified under an earlier schema and await their push and its echo; until then the stored checksum
        /// cannot be recomputed (not damage).
        case awaitingPull = "awaiting_pull"
        /// The checksum was verified under an earlier schema; the next pull verifies it under the active one.
        case awaitingSchemaVerification = "awaiting_schema_verification"
        /// No checksum is installed (a new, invalidated or rebuilding scope).
        case noChecksum = "no_checksum"
    }

    /// One local scope.
    public struct Scope: Sendable, Equatable {
        /// The scope ID.
        public let scopeID: String
        /// Provenance edges (rows the scope justifies locally).
        public let rows: Int
        /// Whether an incremental cursor is installed.
        public let hasCursor: Bool
        /// Whether a verified checksum is installed.
        public let hasChecksum: Bool
        /// What the offline check found about the stored checksum.
        public let digest: Digest
        /// Rows that an accepted push changed after the scope was verified, or, after a schema change, rows with
        /// pending local intent whose stored digest predates the active schema; the next sync brings their echo
        /// and a new checksum. Until then the stored checksum is not compared (this is not damage).
        public let rowsAwaitingPull: Int
        /// The comparison with the server; nil for offline validation.
        public var server: ServerComparison?

        /// Whether the digest recomputed from local rows equals the stored checksum.
        public var digestVerified: Bool { digest == .verified }
    }

    /// Every failed check, in the order the checks ran.
    public var findings: [StoreFinding] = []
    /// Every local scope in byte order of its ID.
    public var scopes: [Scope] = []
    /// Scopes the server assigns that the store does not know yet (online validation only).
    public var newlyAssignedScopes: [String] = []
    /// Unresolved ledger entries (what the next push still has to deliver or resolve).
    public var pendingMutations = 0
    /// The code of the stored blocking error, if any (the next sync refuses to start until it is recovered).
    public var blockingError: String?
    /// Whether a schema migration journal is stored (the next sync resumes it before any request).
    public var migrationJournal = false

    /// True when no check failed.
    public var isValid: Bool { findings.isEmpty }
}
