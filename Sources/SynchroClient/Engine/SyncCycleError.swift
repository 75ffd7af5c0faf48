import SynchroStore
/// Why a sync cycle stopped. Cases name phases, rules and statuses only: never values, tokens or cursors.
public enum SyncCycleError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A connect, pull or rebuild exchange failed non-retryably (or its retries ran out: see `retriesExhausted`).
    case sync(phase: SyncPhase, SyncError)
    /// A push or renewal step failed non-retryably.
    case push(PushError)
    /// A retryable failure persisted through every attempt the policy allows; `failure` is the last attempt's
    /// transport failure when it got no reply (`status` nil).
    case retriesExhausted(phase: SyncPhase, attempts: Int, status: Int?, failure: SyncTransportFailure? = nil)
    /// The server kept requiring a reconnect (409 `client_generation_expired`, 422 `schema_mismatch`).
    case reconnectLimit(phase: SyncPhase, code: String)
    /// Scopes were still rebuild-required after the last bounded rebuild pass, or a scope kept restarting.
    case rebuildLimit(scope: String)
    /// The cycle attempted a transition the client state machine forbids (a non-retryable local contract error).
    case illegalTransition(IllegalTransition)
    /// An explicit rebuild named a scope the store does not have; nothing was changed.
    case scopeNotAssigned(scope: String)
    /// Cycles kept ending with work left (intent to push or a scope without verified state).
    case notCurrent(cycles: Int)
    /// A schema reset was requested but no `unsupported` blocking error is stored; nothing was sent.
    case schemaResetNotPending
    /// The context's page limit is outside the range pull and rebuild requests allow (`spec/wire-protocol.md` §9:
    /// 1…1000); nothing was sent. The contract forbids clamping it to a valid value.
    case invalidPageLimit(limit: Int64, allowed: ClosedRange<Int64>)
    /// A pull phase, or one rebuild attempt of a scope, applied ``SyncCycle/Configuration/maxPages`` pages and the
    /// server still had more: stopped, every applied page committed.
    case pageLimit(phase: SyncPhase, pages: Int)
    /// The cycle was stopped at a step boundary (``SyncCycle/isCancelled``); committed state is intact.
    case cancelled
    /// A stored blocking error refuses every cycle until its recovery action is taken (`spec/client-store.md`
    /// §4.12, §11): `schema_reset` (``SyncCycle/runSchemaReset()``), `retry`
    /// (``SyncCycle/acknowledgeBlockingError()``) or `none` (no recovery exists). Nothing was sent or changed.
    case blocked(operation: String, code: String, recoveryAction: String)

    /// True when the server refused the credential (401 `auth_required`) on any exchange.
    public var isAuthFailure: Bool {
        switch self {
        case .sync(_, .http(401, _)), .push(.requestFailed(401, _)), .blocked(_, "auth_required", _): true
        default: false
        }
    }

    /// The stable code of the failure: the server's wire code when the server refused (or the stored blocking
    /// error's code), else the engine's own snake_case rule. Never a value, token or cursor.
    public var code: String {
        switch self {
        case .sync(_, let error): error.code
        case .push(let error): error.code
        case .retriesExhausted: "retries_exhausted"
        case .reconnectLimit: "reconnect_limit"
        case .rebuildLimit: "rebuild_limit"
        case .illegalTransition: "invalid_state_transition"
        case .scopeNotAssigned: "scope_not_assigned"
        case .notCurrent: "not_current"
        case .schemaResetNotPending: "schema_reset_not_pending"
        case .invalidPageLimit: "invalid_page_limit"
        case .pageLimit: "page_limit"
        case .cancelled: "cancelled"
        case .blocked(_, let code, _): code
        }
    }

    /// Whether running the same cycle again without any recovery may succeed: only a retryable failure whose
    /// attempts ran out (its durable backoff record schedules the next attempt) and a stop.
    public var isRetryable: Bool {
        switch self {
        case .retriesExhausted, .cancelled: true
        case .sync(_, let error): error.isRetryable
        case .push(let error): error.isRetryable
        default: false
        }
    }

    public var description: String {
        switch self {
        case .sync(let phase, let error):
            if case .http(401, _) = error { return "\(phase.rawValue): authentication failed (HTTP 401)" }
            return "\(phase.rawValue): \(error)"
        case .push(let error):
            if case .requestFailed(401, _) = error { return "push: authentication failed (HTTP 401)" }
            return error.description
        case .retriesExhausted(let phase, let attempts, let status, let failure):
            return "\(phase.rawValue): still failing after \(attempts) attempt\(attempts == 1 ? "" : "s")"
                + (status.map { " (last HTTP \($0))" } ?? failure.map { " (last: \($0))" } ?? " (no response)")
        case .reconnectLimit(let phase, let code):
            return "\(phase.rawValue): the server kept requiring a reconnect (\(code))"
        case .rebuildLimit(let scope):
            return "rebuild: scope \(scope) did not reach a verified state"
        case .illegalTransition(let transition):
            return transition.description
        case .scopeNotAssigned(let scope):
            return "rebuild: scope \(scope) is not assigned to this store"
        case .notCurrent(let cycles):
            return "sync: still not current after \(cycles) cycles"
        case .schemaResetNotPending:
            return "connect: no unsupported schema awaits a reset"
        case .invalidPageLimit(let limit, let allowed):
            return "sync: page limit \(limit) is outside the allowed range "
                + "\(allowed.lowerBound)…\(allowed.upperBound)"
        case .pageLimit(let phase, let pages):
            return "\(phase.rawValue): the server still had more after \(pages) pages, the most one run applies"
        case .cancelled:
            return "sync: stopped"
        case .blocked(let operation, let code, let recoveryAction):
            return "sync: blocked by a stored non-retryable \(operation) error (\(code)); recovery action: "
                + (recoveryAction == "none" ? "none defined" : recoveryAction)
        }
    }
}
