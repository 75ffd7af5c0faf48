import SynchroStore
import SQLiteKit
import SynchroProtocol

extension CycleRun {
    /// Re-checks the seed receipts once, then connects, repeating only the exchange after a retryable failure.
    func connect() throws(SyncCycleError) {
        try enter(.connecting)
        events(.phaseStarted(.connect))
        let exchange = ConnectExchange(context: context)
        let rejected = try mapping(.connect) { () throws(SyncError) in try exchange.checkSeedReceipts() }
        summary.seedReceipts += rejected
        let reset = schemaReset
        let outcome: ConnectOutcome
        do {
            outcome = try retrying(.connect) { () throws(SyncError) in try exchange.send(schemaReset: reset) }
        } catch {
            // An `unsupported` answer was just stored as the blocking error: this run ends as every later one will,
            // blocked, naming the reason and the reset that recovers (exit status 3, not a plain failure).
            if let reason = try? SchemaUnsupportedRecord.stored(in: context.store) {
                throw .blocked(operation: "connect", code: reason, recoveryAction: "schema_reset")
            }
            throw error
        }
        schemaReset = false
        summary.seedReceipts += outcome.seedReceipts
        summary.seedReceipts.sort { $0.scopeID.utf8Precedes($1.scopeID) }
        // The manifest was applied in the transaction that installed the response (§10.3: `replace` and
        // `rebuild_local` pass through `schema_applying`).
        if outcome.schemaAction != "none" {
            try enter(.schemaApplying)
            events(.schemaApplied(action: outcome.schemaAction))
        }
        try enter(.ready)
        events(.phaseFinished(.connect))
    }

    /// After 400 `invalid_schema_reference` to a connect from a store that never installed one: the server holds a
    /// registration of the bound ID that this store never received (a lost first-connect response, or an ID another
    /// installation registered). The store leaves that identity for a new one from the UUID source, in one
    /// transaction that records the left ID and keeps every authored mutation with its ID
    /// (``ClientIdentity/leaveUnheld(for:in:)``); the caller then connects fresh. False, with nothing changed, for
    /// any other answer or a store that ever connected: that refusal is stored as the dispatch table says.
    func leaveUnheldIdentity(status: Int, code: String?) throws(SyncCycleError) -> Bool {
        guard status == 400, code == "invalid_schema_reference" else { return false }
        let store = context.store
        let newID = store.configuration.uuids.next()
        let left = try mapping(.connect) { () throws(SyncError) in try ClientIdentity.leaveUnheld(for: newID, in: store) }
        guard let left else { return false }
        summary.replacedClientIDs.append(left)
        events(.clientIdentityReplaced(left: left, current: newID))
        return true
    }

    /// Refuses the run while a blocking error is stored (`spec/client-store.md` §11), unless this run is that
    /// error's own recovery (the explicit reset of a `schema_reset` error). The state machine stays in, or
    /// enters, `error`: a refused run never passes through `local_ready` (§10.2 needs the condition remedied).
    func refuseWhileBlocked() throws(SyncCycleError) {
        let stored = try mapping(.connect) { () throws(SyncError) in try BlockingErrorStore.stored(in: context.store) }
        guard let stored, !(schemaReset && stored.recoveryAction == "schema_reset") else { return }
        // `stopped` may only move to `local_ready`; from there the refusal enters `error` like any failure.
        if cycle.status.state == .stopped { try enter(.localReady) }
        throw .blocked(operation: stored.operation, code: stored.code, recoveryAction: stored.recoveryAction)
    }

    /// Whether an `unsupported` blocking error awaits the explicit reset.
    func resetPending() throws(SyncCycleError) -> Bool {
        try mapping(.connect) { () throws(SyncError) in try SchemaUnsupportedRecord.stored(in: context.store) } != nil
    }

    /// Whether a reset migration is journaled (prepared, or applied with rebuilds still owed).
    func resetApplied() throws(SyncCycleError) -> Bool {
        try mapping(.connect) { () throws(SyncError) in
            try context.store.readSyncState { connection in
                try connection.scalar(
                    "SELECT count(*) FROM _synchro_schema_migration WHERE is_schema_reset = 1")?.integerValue ?? 0
            }
        } > 0
    }
}
