/// One non-retryable row of the client contract's dispatch table ("Errors and backoff", "Strict dispatch";
/// `spec/wire-protocol.md` §8.2) as the engine stores it: the server's status and code, the recovery action the
/// stored blocking error names (`spec/client-store.md` §4.12), and what the refusal means, in words that carry no
/// value, token or cursor.
///
/// The three recovery dispatches (409 `client_generation_expired`, 409 `rebuild_restart_required`, 422
/// `schema_mismatch`) and the retryable rows (429, 503) are not refusals: the cycle handles them itself.
public struct SyncRefusal: Sendable, Equatable {
    /// The HTTP status the server answered.
    public let status: Int
    /// The wire error code: the stable code of the stored blocking error.
    public let code: String
    /// `retry` (an explicit acknowledgement once the cause is remedied) or `none` (no recovery exists for this
    /// store: the contract says never to resend the refused identity).
    public let recoveryAction: String
    /// What the refusal means, for people.
    public let meaning: String

    /// Every refusal is non-retryable: the contract's table says so for each of its rows.
    public var isRetryable: Bool { false }

    /// The dispatch table's non-retryable rows, in the contract's order.
    public static let table: [SyncRefusal] = [
        SyncRefusal(
            status: 400, code: "invalid_request", recoveryAction: "retry",
            meaning: "the server refused the request as breaking its rules (for a push: a batch it will not accept, "
                + "such as an atomic batch); the sealed batch and every local state are kept"),
        SyncRefusal(
            status: 400, code: "invalid_schema_reference", recoveryAction: "retry",
            meaning: "the server refused the schema reference or client generation this store presented on connect"),
        SyncRefusal(
            status: 401, code: "auth_required", recoveryAction: "retry",
            meaning: "the server refused the credential, or this client ID belongs to another user"),
        SyncRefusal(
            status: 409, code: "idempotency_conflict", recoveryAction: "none",
            meaning: "the server holds a batch or mutation identity of this client with different content; the "
                + "sealed request is kept for inspection and is never sent again"),
        SyncRefusal(
            status: 409, code: "client_retired", recoveryAction: "none",
            meaning: "the server retired this client identity irreversibly; this store can never sync again and a "
                + "retired identity is never reused"),
        SyncRefusal(
            status: 426, code: "upgrade_required", recoveryAction: "retry",
            meaning: "the server requires a newer protocol or client version; normal sync stops until the client "
                + "is upgraded"),
        SyncRefusal(
            status: 500, code: "sync_integrity_failure", recoveryAction: "retry",
            meaning: "the server found its own durable state violating integrity; local state is kept"),
    ]

    /// The row for a non-200 answer, or nil when the answer is not one of the table's non-retryable rows (a
    /// recovery dispatch, a retryable answer, or a status or code the table does not name).
    public static func matching(status: Int, code: String?) -> SyncRefusal? {
        guard let code else { return nil }
        return table.first { $0.status == status && $0.code == code }
    }

    /// The row of a stored blocking error's code, if the table has one.
    public static func named(_ code: String) -> SyncRefusal? {
        table.first { $0.code == code }
    }
}
