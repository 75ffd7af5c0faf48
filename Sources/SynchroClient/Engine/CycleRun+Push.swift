import SynchroStore
import SQLiteKit
import SynchroProtocol

extension CycleRun {
    /// Pushes sealed batches one at a time until nothing is sendable, renewing a `renewal_required` batch first.
    func push() throws(SyncCycleError) {
        guard try hasPushWork() else { return }
        let exchange = PushExchange(store: context.store, transport: transport)
        try enter(.pushing)
        events(.phaseStarted(.push))
        var attempt = 0
        while true {
            try renewIfNeeded(exchange)
            let batch: SealedBatch?
            let outcome: PushExchange.Outcome?
            do {
                batch = try BatchSealer(store: context.store, batchSize: configuration.batchSize).nextBatch()
                outcome = try batch.map { (batch) throws(PushError) in try exchange.send(batch) }
            } catch .transport(let failure) where failure.isRetryable {
                // A lost response: the sealed batch is unchanged and is re-sent byte for byte.
                attempt += 1
                try scheduleRetry(.push, attempt: attempt, status: nil, failure: failure)
                continue
            } catch .requestFailed(let status, let code) {
                // The sealed batch stays `pending`; the stored refusal keeps it from being sent again.
                try refuse(.push, status: status, code: code)
                throw .push(.requestFailed(status: status, code: code))
            } catch {
                throw .push(error)
            }
            switch outcome {
            case nil:
                try enter(.ready)
                events(.phaseFinished(.push))
                return
            case .reconciled(let result)?:
                try enter(.pushing)
                attempt = 0
                let count = result.applied + result.conflicts + result.rejectedTerminal
                summary.mutationsPushed += count
                summary.mutationsAccepted += result.applied
                summary.mutationsRejected += result.conflicts + result.rejectedTerminal
                events(.pageApplied(phase: .push, scope: nil, rows: count))
                if let batch { try publishOutcomes(of: batch) }
            case .retryable(let status)?:
                attempt += 1
                try scheduleRetry(.push, attempt: attempt, status: status)
            case .renewalRequired(let code)?:
                // Surfaced as the refusal it was, so `run` reconnects; the renewal then runs before the next push.
                throw .sync(phase: .push, .http(status: code == "schema_mismatch" ? 422 : 409, code: code))
            }
        }
    }

    /// One event per reconciled mutation of `batch`, in request order, with its stable ID and the server's code.
    private func publishOutcomes(of batch: SealedBatch) throws(SyncCycleError) {
        let outcomes = try mapping(.push) { () throws(SyncError) in
            try context.store.readSyncState { connection in
                try connection.query("""
                    SELECT entry.mutation_id, entry.lifecycle_state, rejection.code
                    FROM _synchro_push_batch_members AS member
                    JOIN _synchro_pending_changes AS entry ON entry.mutation_id = member.mutation_id
                    LEFT JOIN _synchro_rejected_mutations AS rejection ON rejection.mutation_id = member.mutation_id
                    WHERE member.batch_id = ? ORDER BY member.ordinal
                    """, [.text(batch.batchID)]) { row in
                    (try row.text(at: 0), try row.text(at: 1), row.isNull(at: 2) ? "" : try row.text(at: 2))
                }
            }
        }
        for (mutationID, state, code) in outcomes {
            if state == MutationLifecycleState.accepted.rawValue {
                events(.mutationAccepted(mutationID: mutationID))
            } else if state == MutationLifecycleState.rejected.rawValue {
                events(.mutationRejected(mutationID: mutationID, code: code))
            }
        }
    }

    /// After a reconnect, the batch the server refused gets its successor before anything else is sent.
    private func renewIfNeeded(_ exchange: PushExchange) throws(SyncCycleError) {
        let waiting: Int64
        do {
            waiting = try context.store.readSyncState { connection in
                try connection.scalar(
                    "SELECT count(*) FROM _synchro_push_batches WHERE state = 'renewal_required'")?.integerValue ?? 0
            }
        } catch {
            throw .sync(phase: .renew, error)
        }
        guard waiting > 0 else { return }
        events(.phaseStarted(.renew))
        do {
            _ = try exchange.renewBatch()
        } catch {
            throw .push(error)
        }
        summary.batchesRenewed += 1
        events(.phaseFinished(.renew))
    }

    /// Whether a sealed batch waits or unsealed intent exists (`spec/wire-protocol.md` §10.3 scheduler step 1).
    private func hasPushWork() throws(SyncCycleError) -> Bool {
        try mapping(.push) { () throws(SyncError) in
            try context.store.readSyncState { connection in
                try connection.scalar(Self.pushWorkSQL)?.integerValue == 1
            }
        }
    }

    /// 1 when a sealed batch waits or unsealed intent exists, else 0.
    static let pushWorkSQL = """
        SELECT EXISTS (SELECT 1 FROM _synchro_push_batches WHERE state IN ('pending', 'renewal_required'))
            OR EXISTS (SELECT 1 FROM _synchro_pending_changes WHERE lifecycle_state = 'unsealed')
        """
}
