import SynchroStore
/// The steps of one sync cycle, in the order the contract runs them (`spec/wire-protocol.md` §10.3).
public enum SyncPhase: String, Sendable, Equatable, CaseIterable {
    /// `POST /sync/connect`: generation, schema action and scope assignment.
    case connect
    /// Successors for sealed batches that a generation or schema change made `renewal_required`.
    case renew
    /// Every eligible sealed batch, one at a time, each reconciled before the next.
    case push
    /// Single-scope rebuilds of every scope without a cursor.
    case rebuild
    /// Incremental pull pages until a terminal page.
    case pull
}

/// Progress of a running cycle, for a progress display or JSON Lines. Events name phases, scopes and counts
/// only: never row values, tokens, cursors or request bodies (ARCHITECTURE.md, design rules).
public enum SyncEvent: Sendable, Equatable {
    /// A phase began.
    case phaseStarted(SyncPhase)
    /// A phase ended without error.
    case phaseFinished(SyncPhase)
    /// One page (pull or rebuild) or one reconciled push batch was committed; `rows` counts its rows or
    /// mutations, `scope` names the rebuilt scope.
    case pageApplied(phase: SyncPhase, scope: String?, rows: Int)
    /// A rebuild page verified the scope's final checksum.
    case scopeVerified(scope: String)
    /// A retryable failure (429, 503, a lost response) is retried after `delay`; `attempt` is the failed one and
    /// `failure` what the transport said when no reply arrived (its rule and URL).
    case retryScheduled(
        phase: SyncPhase, attempt: Int, status: Int?, delay: Duration, failure: SyncTransportFailure? = nil)
    /// The server refused a first connect from an identity it had registered but this store never held (a lost
    /// first-connect response): the store left `left` for `current` and connects fresh, keeping every authored
    /// mutation (`docs/decisions.md`, "A lost first-connect response: the store leaves the identity it never held").
    case clientIdentityReplaced(left: String, current: String)
    /// A connect's schema action (`replace`, `rebuild_local`) was applied.
    case schemaApplied(action: String)
    /// The server applied this mutation (its stable ID).
    case mutationAccepted(mutationID: String)
    /// The server answered this mutation with a conflict or a terminal rejection (`code`, e.g. `version_conflict`).
    case mutationRejected(mutationID: String, code: String)
    /// A rebuild of the scope starts (or resumes).
    case rebuildRequested(scope: String)
    /// The scope's rebuild finished and verified.
    case rebuildCompleted(scope: String)
    /// The client state machine moved (published by ``SynchroDatabase``, not by a bare cycle).
    case stateChanged(SyncState)
    /// A cycle ended with a typed error (published by ``SynchroDatabase``, not by a bare cycle).
    case failed(SyncCycleError)
}
