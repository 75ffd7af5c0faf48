import SQLiteKit
import SynchroStore

/// A snapshot of a client store's sync state for operators (`seedkit inspect`), safe to print or log.
///
/// It holds what identifies and counts, never what authorizes or carries data: no scope cursor, checksum,
/// seed receipt, rebuild token, row value or server message. The client ID is included because it is an
/// identity the server already knows, not a credential.
public struct ClientInspection: Sendable, Equatable {
    /// Where one scope is in its sync life.
    public enum ScopeState: String, Sendable, CaseIterable {
        /// A cursor is installed and no rebuild is in progress: pull continues from it.
        case verified
        /// No cursor (new, invalidated or reset scope): the next cycle must rebuild it.
        case rebuildRequired = "rebuild_required"
        /// A rebuild attempt is recorded and resumes on the next cycle.
        case rebuilding
    }

    /// One local scope, described by presence only.
    public struct Scope: Sendable, Equatable {
        /// The scope ID.
        public let scopeID: String
        /// The derived state.
        public let state: ScopeState
        /// The local scope generation (bumped by every invalidation).
        public let generation: Int64
        /// Whether a cursor is installed (its text is never exposed).
        public let hasCursor: Bool
        /// Whether a verified server checksum is installed (its value is never exposed).
        public let hasChecksum: Bool
    }

    /// A retained rejection, without the rejected row or the server's message, which can quote values.
    public struct Rejection: Sendable, Equatable {
        /// The rejected mutation.
        public let mutationID: String
        /// The table it wrote.
        public let tableName: String
        /// The server's rejection code (`version_conflict`, …).
        public let code: String
    }

    /// The error that blocks sync until its recovery action is taken.
    public struct BlockingError: Sendable, Equatable {
        /// The operation that failed (`connect`, `push`, …).
        public let operation: String
        /// The wire error code.
        public let code: String
        /// Whether the server marked it retryable.
        public let retryable: Bool
        /// `retry`, `schema_reset` or `none`.
        public let recoveryAction: String
    }

    /// The active schema version; 0 for a fresh store.
    public let schemaVersion: Int64
    /// The active schema hash, nil for a fresh store.
    public let schemaHash: String?
    /// The client ID the store is bound to, nil until the first connect is sent.
    public let clientID: String?
    /// Client IDs the store left after a lost first-connect response, oldest first (`docs/decisions.md`, "A lost
    /// first-connect response: the store leaves the identity it never held"); never sent again.
    public let replacedClientIDs: [String]
    /// The server-issued client generation; 0 before connect.
    public let generation: Int64
    /// The server's scope-set version; 0 before connect.
    public let scopeSetVersion: Int64
    /// Every local scope in byte order of its ID.
    public let scopes: [Scope]
    /// Ledger entries per lifecycle state; states with no entry are absent.
    public let mutations: [MutationLifecycleState: Int]
    /// Stored push batches per state (`pending`, `completed`, …); states with no batch are absent.
    public let batches: [String: Int]
    /// Retained rejections in mutation ID order.
    public let rejections: [Rejection]
    /// The blocking error, if any.
    public let blockingError: BlockingError?

    /// Unresolved ledger entries: what the next push still has to deliver or resolve.
    public var pendingMutationCount: Int {
        mutations.filter { $0.key.isUnresolved }.reduce(0) { $0 + $1.value }
    }
}

extension ClientStore {
    /// Reads the store's sync state from one snapshot of the engine connection (no write, no migration).
    public func inspect() throws(ClientStoreError) -> ClientInspection {
        try withEngine { (connection) throws(ClientStoreError) -> ClientInspection in
            try mappingStoreErrors {
                try connection.transaction(kind: .deferred) { try InspectionReader(connection: connection).read() }
            }
        }
    }
}

/// The queries behind ``ClientStore/inspect()``; each reads presence or counts, never secret columns' text.
private struct InspectionReader {
    let connection: Connection

    func read() throws -> ClientInspection {
        let hash = try MetaStore.value(.schemaHash, on: connection)
        let clientID = try MetaStore.value(.clientServerID, on: connection)
        return ClientInspection(
            schemaVersion: try MetaStore.integer(.schemaVersion, on: connection),
            schemaHash: hash?.isEmpty == false ? hash : nil,
            clientID: clientID?.isEmpty == false ? clientID : nil,
            replacedClientIDs: try ClientIdentity.replaced(on: connection),
            generation: try MetaStore.integer(.clientGeneration, on: connection),
            scopeSetVersion: try MetaStore.integer(.scopeSetVersion, on: connection),
            scopes: try scopes(), mutations: try mutations(), batches: try batches(), rejections: try rejections(),
            blockingError: try blockingError())
    }

    private func scopes() throws -> [ClientInspection.Scope] {
        // Only NULL tests leave SQLite: the cursor and checksum text never reach Swift.
        try connection.query("""
            SELECT s.scope_id, s.generation, s.cursor IS NOT NULL, s.checksum IS NOT NULL,
                EXISTS (SELECT 1 FROM _synchro_rebuild_attempts a WHERE a.scope_id = s.scope_id)
            FROM _synchro_scopes s ORDER BY s.scope_id
            """) { row in
            let hasCursor = row.int64(at: 2) != 0
            let state: ClientInspection.ScopeState =
                row.int64(at: 4) != 0 ? .rebuilding : hasCursor ? .verified : .rebuildRequired
            return ClientInspection.Scope(
                scopeID: try row.text(at: 0), state: state, generation: row.int64(at: 1), hasCursor: hasCursor,
                hasChecksum: row.int64(at: 3) != 0)
        }
    }

    private func mutations() throws -> [MutationLifecycleState: Int] {
        let counts = try connection.query(
            "SELECT lifecycle_state, count(*) FROM _synchro_pending_changes GROUP BY lifecycle_state"
        ) { (try $0.text(at: 0), Int($0.int64(at: 1))) }
        var result: [MutationLifecycleState: Int] = [:]
        for (name, count) in counts {
            // The column has a CHECK constraint; an unknown name would mean a newer layout, which opening refuses.
            guard let state = MutationLifecycleState(rawValue: name) else { continue }
            result[state] = count
        }
        return result
    }

    private func batches() throws -> [String: Int] {
        let counts = try connection.query("SELECT state, count(*) FROM _synchro_push_batches GROUP BY state") {
            (try $0.text(at: 0), Int($0.int64(at: 1)))
        }
        return Dictionary(counts, uniquingKeysWith: +)
    }

    private func rejections() throws -> [ClientInspection.Rejection] {
        try connection.query(
            "SELECT mutation_id, table_name, code FROM _synchro_rejected_mutations ORDER BY mutation_id"
        ) {
            ClientInspection.Rejection(
                mutationID: try $0.text(at: 0), tableName: try $0.text(at: 1), code: try $0.text(at: 2))
        }
    }

    private func blockingError() throws -> ClientInspection.BlockingError? {
        try BlockingErrorStore.stored(on: connection)
    }
}
