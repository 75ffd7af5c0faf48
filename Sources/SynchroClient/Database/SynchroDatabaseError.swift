import SynchroStore
/// Why a ``SynchroDatabase`` call failed. Cases name rules, paths and codes only: never credentials, tokens,
/// request bodies or row values.
public enum SynchroDatabaseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Another owner — a ``SynchroDatabase`` or a `seedkit` command, in this or another process — holds the
    /// store (seed 002: one physical owner, a competing open fails with `store_in_use`). Refused at once, never
    /// waited for; `holderPID` names the owner's process when it recorded one.
    case storeInUse(path: String, holderPID: Int32?)
    /// The configured page limit is outside the range pull and rebuild requests allow (`spec/wire-protocol.md`
    /// §9: 1…1000); nothing was opened. The contract forbids clamping it.
    case invalidPageLimit(limit: Int64, allowed: ClosedRange<Int64>)
    /// The local store failed to open or to answer.
    case store(ClientStoreError)
    /// A sync lifecycle method was called from inside an application transaction callback; refused before any
    /// lifecycle lock is taken.
    case calledInsideApplicationTransaction
    /// A stored blocking error stops sync until its recovery action is taken (`schema_reset`:
    /// ``SynchroDatabase/resetSchema()``).
    case syncBlocked(operation: String, code: String, recoveryAction: String)
    /// `syncNow()` or `pause()` was called while sync is not started.
    case syncNotStarted
    /// `syncNow()` was called while sync is paused; ``SynchroDatabase/resume()`` first.
    case syncPaused
    /// ``SynchroDatabase/settlement(of:)`` was asked about a mutation ID the ledger does not hold.
    case unknownMutation(mutationID: String)
    /// The task awaiting a settlement was cancelled; the mutation itself is untouched.
    case settlementCancelled
    /// A schema reset was requested but no `unsupported` schema awaits one.
    case schemaResetNotPending
    /// A retained record is neither a current nor a legacy record (only some of its fields are present).
    case inconsistentRecord(mutationID: String, rule: String)
    /// A deprecated inspection call (``SynchroDatabase/inspectPendingMutations()`` and its siblings) met a legacy
    /// record, which it cannot represent (client contract, "Public native SDK surface").
    case legacyRecordPresent(mutationID: String)
    /// The database was closed.
    case closed

    /// Stable snake_case name of the rule.
    public var rule: String {
        switch self {
        case .storeInUse: "store_in_use"
        case .invalidPageLimit: "invalid_page_limit"
        case .store(let error): "store.\(error.rule)"
        case .calledInsideApplicationTransaction: "called_inside_application_transaction"
        case .syncBlocked: "sync_blocked"
        case .syncNotStarted: "sync_not_started"
        case .syncPaused: "sync_paused"
        case .unknownMutation: "unknown_mutation"
        case .settlementCancelled: "settlement_cancelled"
        case .schemaResetNotPending: "schema_reset_not_pending"
        case .inconsistentRecord: "inconsistent_record"
        case .legacyRecordPresent: "legacy_record_present"
        case .closed: "closed"
        }
    }

    public var description: String {
        switch self {
        case .storeInUse(let path, let holder):
            "the store \(path) is in use by \(holder.map { "process \($0)" } ?? "another owner") (store_in_use)"
        case .invalidPageLimit(let limit, let allowed):
            "page limit \(limit) is outside the allowed range \(allowed.lowerBound)…\(allowed.upperBound)"
        case .store(let error): "store: \(error)"
        case .calledInsideApplicationTransaction:
            "a sync lifecycle method was called from inside an application transaction"
        case .syncBlocked(let operation, let code, let recovery):
            "sync is blocked by \(code) during \(operation) (recovery: \(recovery))"
        case .syncNotStarted: "sync is not started"
        case .syncPaused: "sync is paused"
        case .unknownMutation(let id): "no mutation \(id) in the ledger"
        case .settlementCancelled: "the wait for a settlement was cancelled"
        case .schemaResetNotPending: "no unsupported schema awaits a reset"
        case .inconsistentRecord(let id, let rule): "retained record \(id) is inconsistent (\(rule))"
        case .legacyRecordPresent(let id):
            "retained record \(id) is a legacy record; use the current inspection methods"
        case .closed: "the database is closed"
        }
    }
}
