import SQLiteKit
import SynchroStore

/// The durable blocking error (`_synchro_blocking_error`, `spec/client-store.md` §4.12) as the engine obeys it:
/// while one is stored, no cycle runs (§11 "Start: refuse while a blocking error exists") until its recovery
/// action removes it. The actions and what clears them:
///
/// - `schema_reset` (an `unsupported` connect): only the explicit reset connect (``SyncCycle/runSchemaReset()``),
///   whose installation deletes the row (client contract, "Connection and schema actions").
/// - `retry`: only the explicit acknowledgement ``SyncCycle/acknowledgeBlockingError()`` (`spec/wire-protocol.md`
///   §10.2: `error → local_ready` needs an explicit retry action; a timer cannot do it).
/// - `none` (the reserved push envelope alone breaks a request limit): nothing; the contract defines no recovery.
enum BlockingErrorStore {
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
