import SQLiteKit
import SynchroStore
import SynchroProtocol

/// One push attempt of a sealed batch (`spec/wire-protocol.md` §4, §8): the stored bytes are sent exactly, so
/// every retry is byte-identical, and the response is dispatched by status and error code.
public struct PushExchange: Sendable {
    /// The store holding the batch and ledger.
    public let store: ClientStore
    /// How requests reach the server.
    public let transport: any SyncTransport

    public init(store: ClientStore, transport: any SyncTransport) {
        self.store = store
        self.transport = transport
    }

    /// What one attempt led to. Every case but `reconciled` leaves the sealed batch `pending` or
    /// `renewal_required`, byte for byte as it was sealed.
    public enum Outcome: Sendable, Equatable {
        /// A 200 reconciled in one transaction; the batch is `completed`.
        case reconciled(PushReconciler.Summary)
        /// 409 `client_generation_expired` or 422 `schema_mismatch`: the batch is `renewal_required`; reconnect,
        /// then ``renewBatch()`` creates its successor.
        case renewalRequired(code: String)
        /// A retryable answer (``ErrorReply``: the envelope's `retryable: true`, or without an envelope 429, 502,
        /// 503 or 504): retry the same bytes after backoff, at least the reply's `Retry-After`.
        case retryable(status: Int)
    }

    /// Seals (or loads) the next batch and pushes it once. Nil when nothing is sendable.
    public func pushNext(batchSize: Int = 100) throws(PushError) -> Outcome? {
        guard let batch = try BatchSealer(store: store, batchSize: batchSize).nextBatch() else { return nil }
        return try send(batch)
    }

    /// Sends `batch.body` as stored and dispatches the response. A transport failure throws
    /// ``PushError/transport(_:)`` and changes nothing: the caller retries with the same batch.
    public func send(_ batch: SealedBatch) throws(PushError) -> Outcome {
        let response: SyncReply
        do {
            response = try transport.post(path: "/sync/push", body: batch.body)
        } catch is ResponseTooLarge {
            throw .responseContract(rule: "response_too_large")
        } catch {
            throw .transport(SyncTransportFailure(error))
        }
        SyncCrashPoint.pushReceived.reached()
        switch response.status {
        case 200:
            let summary = try PushReconciler(store: store).reconcile(batch: batch, responseBody: response.body)
            SyncCrashPoint.pushReconciled.reached()
            return .reconciled(summary)
        default:
            let reply = ErrorReply(status: response.status, body: response.body)
            if reply.isRetryable { return .retryable(status: response.status) }
            let code = reply.code
            if (response.status == 409 && code == "client_generation_expired")
                || (response.status == 422 && code == "schema_mismatch") {
                try markRenewalRequired(batch.batchID)
                return .renewalRequired(code: code ?? "")
            }
            throw .requestFailed(status: response.status, code: code)
        }
    }

    /// After a reconnect: the `renewal_required` batch stays an immutable record (`superseded`) and a successor
    /// with a new batch ID, the current generation and schema, the same `atomic` flag and the unchanged
    /// mutations (original IDs, exact authored content) becomes the `pending` batch, in one transaction.
    public func renewBatch() throws(PushError) -> SealedBatch {
        let uuids = store.configuration.uuids
        let now = store.configuration.clock.timestamp()
        let successor = try store.withEnginePush { connection throws(PushError) -> SealedBatch in
            try mappingPushErrors {
                try connection.transaction(kind: .immediate) { () throws -> SealedBatch in
                    let rows = try connection.rows(
                        "SELECT batch_id, request_json FROM _synchro_push_batches WHERE state = 'renewal_required'")
                    guard rows.count == 1, let oldID = rows[0][0].textValue, let text = rows[0][1].textValue else {
                        throw PushError.renewalNotPossible(rule: "one_batch_awaiting_renewal")
                    }
                    let old = try PendingBatches.load(batchID: oldID, requestJSON: text, on: connection)
                    guard let request = try? PushRequest.parse(body: old.body, shape: .wire) else {
                        throw PushError.sealedBatchInvalid(batchID: oldID, rule: "unparsable")
                    }
                    let binding = try PushBinding.current(on: connection)
                    guard binding.generation != request.clientGeneration || binding.schema != request.schema else {
                        throw PushError.renewalNotPossible(rule: "binding_unchanged")
                    }
                    let newID = uuids.next()
                    // The mutations are carried over as parsed from the stored bytes, never re-read from the
                    // ledger, so the successor cannot differ from what the server may already have seen.
                    let successor = try BatchSealer.request(
                        request.mutations, atomic: request.isAtomic, batchID: newID, binding: binding)
                    let body = successor.wireBody()
                    let pendingJSON = try connection.scalar(
                        "SELECT pending_json FROM _synchro_push_batches WHERE batch_id = ?", [.text(oldID)]
                    )?.textValue ?? "[]"
                    try connection.run("""
                        INSERT INTO _synchro_push_batches
                            (batch_id, request_json, pending_json, schema_json, state, created_at)
                        VALUES (?, ?, ?, ?, 'pending', ?)
                        """, [
                        .text(newID), .text(String(decoding: body, as: UTF8.self)), .text(pendingJSON),
                        .text(binding.localSchemaJSON), .text(now),
                    ])
                    for (ordinal, id) in old.mutationIDs.enumerated() {
                        try connection.run(
                            "INSERT INTO _synchro_push_batch_members (batch_id, mutation_id, ordinal) VALUES (?, ?, ?)",
                            [.text(newID), .text(id), .integer(Int64(ordinal))])
                        try connection.run("""
                            UPDATE _synchro_pending_changes SET sealed_batch_id = ?, updated_at = ?
                            WHERE mutation_id = ? AND sealed_batch_id = ?
                            """, [.text(newID), .text(now), .text(id), .text(oldID)])
                    }
                    try connection.run(
                        "UPDATE _synchro_push_batches SET state = 'superseded', completed_at = ? WHERE batch_id = ?",
                        [.text(now), .text(oldID)])
                    try PendingBatches.clearBackoff(naming: oldID, on: connection)
                    return SealedBatch(batchID: newID, body: body, mutationIDs: old.mutationIDs,
                                       isAtomic: request.isAtomic)
                }
            }
        }
        SyncCrashPoint.pushRenewed.reached()
        return successor
    }

    private func markRenewalRequired(_ batchID: String) throws(PushError) {
        try store.withEnginePush { connection throws(PushError) in
            try mappingPushErrors {
                try connection.run(
                    "UPDATE _synchro_push_batches SET state = 'renewal_required' WHERE batch_id = ? "
                        + "AND state = 'pending'", [.text(batchID)])
            }
        }
    }
}
