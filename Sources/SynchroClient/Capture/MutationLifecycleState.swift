import SynchroStore
/// Where a ledger entry is in its life (`spec/client-store.md` §4.4).
public enum MutationLifecycleState: String, Sendable, CaseIterable {
    /// Captured, not yet in a batch; may still be normalized.
    case unsealed
    /// Member of a stored batch; immutable.
    case sealed
    /// The server accepted it (terminal).
    case accepted
    /// Conflict or terminal rejection (terminal, retained for inspection).
    case rejected
    /// Local terminal: alone it breaks a push limit; never sent.
    case exceedsPushLimit = "exceeds_push_limit"
    /// Cannot be sent: a same-row predecessor failed, a delete precedes it, or a group member is blocked.
    case blockedByPredecessor = "blocked_by_predecessor"
    /// Merged into a normalized successor.
    case supersededBeforeSend = "superseded_before_send"
    /// An insert…delete chain cancelled before sending.
    case cancelledBeforeSend = "cancelled_before_send"
    /// Imported from the pre-ledger queue; no authored payload; never sent.
    case legacyBlocked = "legacy_blocked"

    /// Whether the entry still counts as unresolved (dependencies, protection, pending count).
    public var isUnresolved: Bool {
        !Self.resolved.contains(self)
    }

    static let resolved: Set<MutationLifecycleState> = [
        .accepted, .rejected, .exceedsPushLimit, .supersededBeforeSend, .cancelledBeforeSend,
    ]

    /// `('accepted', …)`: the resolved states as an SQL list.
    static let resolvedSQLList = "('accepted', 'rejected', 'exceeds_push_limit', 'superseded_before_send', "
        + "'cancelled_before_send')"
}

/// How a ledger entry came to exist.
public enum MutationSourceKind: String, Sendable, CaseIterable {
    /// Captured from an application write by a trigger.
    case application
    /// Written by pre-wire normalization of a same-row chain.
    case normalized
    /// Imported from the pre-ledger queue.
    case legacyImport = "legacy_import"
}
