import SynchroStore
/// What one complete sync cycle did. Counts only: never values, tokens or cursors.
public struct SyncSummary: Sendable, Equatable {
    /// HTTP requests sent per endpoint, retries included.
    public var connectRequests = 0
    /// `POST /sync/push` requests, retries included.
    public var pushRequests = 0
    /// `POST /sync/pull` requests, retries included.
    public var pullRequests = 0
    /// `POST /sync/rebuild` requests, retries included.
    public var rebuildRequests = 0
    /// Rows of committed pull changes and rebuild records.
    public var rowsApplied = 0
    /// Scopes whose checksum verified in this cycle (rebuild finality or a terminal pull), byte order.
    public var scopesVerified: [String] = []
    /// Scopes rebuilt in this cycle, in the order they finished.
    public var scopesRebuilt: [String] = []
    /// Mutations in reconciled push batches.
    public var mutationsPushed = 0
    /// Mutations the server applied.
    public var mutationsAccepted = 0
    /// Mutations that came back as `conflict` or `rejected_terminal`.
    public var mutationsRejected = 0
    /// Retries scheduled after retryable failures.
    public var retries = 0
    /// Client IDs the store left in this cycle for a new one after a lost first-connect response, in order.
    public var replacedClientIDs: [String] = []
    /// Sealed batches renewed after a generation or schema change.
    public var batchesRenewed = 0
    /// What became of each seed continuation receipt (local re-check, then the connect's disposition), in byte
    /// order of the scope ID; empty for a store without receipts.
    public var seedReceipts: [SeedReceiptOutcome] = []
    /// The client states the cycle went through (`spec/wire-protocol.md` §10), starting with the state it found;
    /// a self-transition (next batch, next page) is not repeated.
    public var states: [SyncState] = []

    /// Creates an empty summary.
    public init() {}

    /// Every request of the cycle.
    public var totalRequests: Int { connectRequests + pushRequests + pullRequests + rebuildRequests }
}
