import SQLiteKit
import SynchroStore
import SynchroProtocol

/// The typed upgrade-required state a connect `unsupported` enters (`spec/wire-protocol.md` §3.3 row 8, §10.3):
/// one non-retryable `_synchro_blocking_error` row (operation `connect`, code = the server's reason, recovery
/// `schema_reset`). Nothing else changes, so schema, rows, cursors and queued intent stay inspectable.
enum SchemaUnsupportedRecord {
    /// The `schema.reason` values protocol 3 defines.
    static let reasons: Set<String> = ["incompatible_schema_transition", "unknown_schema_lineage"]

    /// Records the blocking error in its own transaction (it must survive the failing connect).
    static func record(reason: String, in store: ClientStore) throws(SyncError) {
        let now = store.configuration.clock.timestamp()
        let metadata = JSONValue.object(JSONObject([JSONMember("reason", .string(reason))]))
        try store.applySync { connection in
            try connection.run("""
                INSERT OR REPLACE INTO _synchro_blocking_error
                    (singleton, operation, code, retryable, message, recovery_action, metadata_json, created_at)
                VALUES (1, 'connect', ?, 0, 'the server does not support the installed schema', 'schema_reset', ?, ?)
                """, [.text(reason), .text(try CanonicalJSON.string(metadata)), .text(now)])
        }
    }

    /// The reason code of a stored `unsupported` blocking error, if any (other blocking errors are not connect's).
    static func stored(in store: ClientStore) throws(SyncError) -> String? {
        try store.readSyncState { connection in
            try connection.query("""
                SELECT code FROM _synchro_blocking_error
                WHERE singleton = 1 AND operation = 'connect' AND recovery_action = 'schema_reset'
                """) { try $0.text(at: 0) }.first
        }
    }
}
