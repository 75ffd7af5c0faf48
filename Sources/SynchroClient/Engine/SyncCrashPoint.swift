import SystemKit

/// The named durable boundaries of the client engine (client contract, "Process-death guarantees";
/// `spec/client-store.md` §11), where a test kills the process to prove that a restart resumes from committed
/// state only.
///
/// `SEEDKIT_CRASH_AT=<name>[:<n>]` kills the process with SIGKILL the n-th time (default: the first) the boundary
/// is reached (``CrashPoint``). Unset, reaching a boundary costs one comparison. Each name is reached right after
/// the transaction it names committed (or, for `*.received`, right after a response arrived and before anything of
/// it was applied; for `capture.before_commit`, inside the write transaction just before its commit).
public enum SyncCrashPoint: String, Sendable, CaseIterable {
    /// Inside an application write transaction, after its statements and capture, before `COMMIT`.
    case captureBeforeCommit = "capture.before_commit"
    /// An application write and its capture committed.
    case captureCommitted = "capture.committed"
    /// A connect 200 arrived; nothing of it is installed yet.
    case connectReceived = "connect.received"
    /// A connect response (schema action, generation, assignment) committed.
    case connectInstalled = "connect.installed"
    /// A schema migration journal was prepared (phase `prepared`), before its DDL ran.
    case schemaPrepared = "schema.prepared"
    /// A schema migration's DDL, activation and assignment committed (journal phase `applied`).
    case schemaApplied = "schema.applied"
    /// A new batch was sealed and stored; nothing was sent yet.
    case pushSealed = "push.sealed"
    /// A push reply arrived; nothing of it is reconciled yet (a lost response, as far as the store knows).
    case pushReceived = "push.received"
    /// A push response's outcomes, rows, versions and the batch completion committed.
    case pushReconciled = "push.reconciled"
    /// A `renewal_required` batch's successor committed.
    case pushRenewed = "push.renewed"
    /// A rebuild attempt (new rebuild ID, reset provenance) committed before its first request.
    case rebuildStarted = "rebuild.started"
    /// A rebuild page arrived; nothing of it is applied yet.
    case rebuildReceived = "rebuild.received"
    /// An intermediate rebuild page, its receipt and the next token committed.
    case rebuildPage = "rebuild.page"
    /// The final rebuild page and the scope's finality (pruning, digest, cursor, checksum) committed.
    case rebuildFinal = "rebuild.final"
    /// A pull page arrived; nothing of it is applied yet.
    case pullReceived = "pull.received"
    /// A pull page (rows, provenance, assignment, checksums, cursors) committed.
    case pullPage = "pull.page"
    /// A durable retry record committed, before the wait.
    case backoffRecorded = "backoff.recorded"

    /// Kills the process when this is the configured boundary and this is its configured occurrence
    /// (``CrashPoint``, the one facility of the package).
    func reached() {
        CrashPoint.reached(rawValue)
    }
}
