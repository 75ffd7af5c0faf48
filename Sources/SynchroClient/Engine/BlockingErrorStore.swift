import SQLiteKit
import SynchroStore
import SynchroProtocol

/// The durable blocking error (`_synchro_blocking_error`, `spec/client-store.md` §4.12) as the engine obeys it:
/// while one is stored, no cycle runs (§11 "Start: refuse while a blocking error exists") until its recovery
/// action removes it. The actions and what clears them:
///
/// - `schema_reset` (an `unsupported` connect): only the explicit reset connect (``SyncCycle/runSchemaReset()``),
///   whose installation deletes the row (client contract, "Connection and schema actions").
/// - `retry`: only the explicit acknowledgement ``SyncCycle/acknowledgeBlockingError()`` (`spec/wire-protocol.md`
///   §10.2: `error → local_ready` needs an explicit retry action; a timer cannot do it).
/// - `none` (the reserved push envelope alone breaks a request limit, or a ``SyncRefusal`` with no recovery such
///   as 409 `client_retired`): nothing; the contract defines no recovery.
enum BlockingErrorStore {
    /// Records a server refusal (``SyncRefusal``) of `operation` as the blocking error, in the one transaction
    /// that ends the refused attempt: the row is written and the attempt's durable retry record, whose deadline
    /// no longer applies to work that is now blocked, is retired. Nothing else changes: a sealed batch stays
    /// `pending` byte for byte, and the stored error keeps it from being sent until its recovery is taken.
    static func record(_ refusal: SyncRefusal, operation: String, in store: ClientStore) throws(SyncError) {
        let now = store.configuration.clock.timestamp()
        let metadata = JSONValue.object(JSONObject([JSONMember("http_status", .string(String(refusal.status)))]))
        try store.applySync { connection in
            try connection.run("""
                INSERT OR REPLACE INTO _synchro_blocking_error
                    (singleton, operation, code, retryable, message, recovery_action, metadata_json, created_at)
                VALUES (1, ?, ?, 0, ?, ?, ?, ?)
                """, [
                    .text(operation), .text(refusal.code), .text(refusal.meaning), .text(refusal.recoveryAction),
                    .text(try CanonicalJSON.string(metadata)), .text(now),
                ])
            try connection.run("DELETE FROM _synchro_backoff")
        }
    }

    /// The stored blocking error, if any.
    static func stored(in store: ClientStore) throws(SyncError) -> ClientInspection.BlockingError? {
        try store.readSyncState { connection in try stored(on: connection) }
    }

    static func stored(on connection: Connection) throws -> ClientInspection.BlockingError? {
        try connection.query(
            "SELECT operation, code, retryable, recovery_action FROM _synchro_blocking_error WHERE singleton = 1"
        ) {
            ClientInspection.BlockingError(
                operation: try $0.text(at: 0), code: try $0.text(at: 1), retryable: $0.int64(at: 2) != 0,
                recoveryAction: try $0.text(at: 3))
        }.first
    }
}
