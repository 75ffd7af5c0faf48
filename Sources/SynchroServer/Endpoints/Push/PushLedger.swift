import SQLiteKit
import SynchroProtocol

/// The push ledger of one scoped client, `(authenticated user, client_id)`: completed batches with
/// their exact response, and every executed mutation with its fingerprint and outcome
/// (`spec/wire-protocol.md` §4.6). Entries never expire; only retirement removes them.
struct PushLedger {
    let db: any StoreExecutor
    let user: String
    let clientID: String

    /// A completed batch: what an exact replay sends back.
    struct CompletedBatch {
        let fingerprint: [UInt8]
        let status: Int
        let body: [UInt8]
    }

    /// A mutation the ledger already owns.
    struct OwnedMutation {
        let fingerprint: [UInt8]
        let outcome: PushOutcome
    }

    func completedBatch(_ batchID: String) throws -> CompletedBatch? {
        let rows = try db.cachedStatement("""
            SELECT fingerprint, status, body FROM push_batches WHERE user_id = ? AND client_id = ? AND batch_id = ?
            """).rows([.text(user), .text(clientID), .text(batchID)])
        guard let row = rows.first else { return nil }
        guard let fingerprint = row[0].blobValue, let status = row[1].integerValue, let body = row[2].blobValue else {
            throw PushIntegrityError.storedOutcome
        }
        return CompletedBatch(fingerprint: fingerprint, status: Int(status), body: body)
    }

    func ownedMutation(_ mutationID: String) throws -> OwnedMutation? {
        let rows = try db.cachedStatement("""
            SELECT fingerprint, outcome, atomic_rejected FROM push_mutations
            WHERE user_id = ? AND client_id = ? AND mutation_id = ?
            """).rows([.text(user), .text(clientID), .text(mutationID)])
        guard let row = rows.first else { return nil }
        guard let fingerprint = row[0].blobValue, let outcome = row[1].blobValue,
              let atomicRejected = row[2].integerValue
        else { throw PushIntegrityError.storedOutcome }
        return OwnedMutation(
            fingerprint: fingerprint, outcome: try PushOutcome(stored: outcome, isAtomicRejected: atomicRejected == 1))
    }

    func recordBatch(_ batchID: String, fingerprint: [UInt8], status: Int, body: [UInt8]) throws {
        try db.cachedStatement("""
            INSERT INTO push_batches(user_id, client_id, batch_id, fingerprint, status, body) VALUES (?, ?, ?, ?, ?, ?)
            """).run([
                .text(user), .text(clientID), .text(batchID), .blob(fingerprint), .integer(Int64(status)), .blob(body),
            ])
    }

    func recordMutation(_ mutationID: String, fingerprint: [UInt8], batchID: String, outcome: PushOutcome) throws {
        try db.cachedStatement("""
            INSERT INTO push_mutations(user_id, client_id, mutation_id, fingerprint, batch_id, outcome, atomic_rejected)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            """).run([
                .text(user), .text(clientID), .text(mutationID), .blob(fingerprint), .text(batchID),
                .blob(outcome.bytes), .integer(outcome.isAtomicRejected ? 1 : 0),
            ])
    }
}

/// Step 5 of the dispatch precedence for the mutations of a new batch (`spec/wire-protocol.md` §4.5,
/// §4.6, §8.4): which stored outcomes the batch reuses, or the whole-request error their reuse is.
enum MutationReuse {
    /// The stored outcomes by request position; throws 409 `idempotency_conflict` for a mutation ID
    /// owned with another fingerprint, and 400 `invalid_request` for an owned mutation in an atomic
    /// request or a stored `atomic_batch_rejected` mutation in a non-atomic one.
    static func storedOutcomes(
        of request: PushRequest, fingerprints: [PushFingerprint], ledger: PushLedger
    ) throws -> [Int: PushOutcome] {
        var owned: [(index: Int, mutation: PushLedger.OwnedMutation)] = []
        for (index, mutation) in request.mutations.enumerated() {
            guard let entry = try ledger.ownedMutation(mutation.mutationID) else { continue }
            // Conflicts decide before the 400 rules: a reused identity with other content is the worse error.
            guard entry.fingerprint == fingerprints[index].digest else {
                throw WireError(.idempotencyConflict, "mutation_id reused with different content")
            }
            owned.append((index, entry))
        }
        var outcomes: [Int: PushOutcome] = [:]
        for (index, entry) in owned {
            if request.isAtomic {
                throw WireError.invalidRequest("atomic_mutation_owned_by_another_batch (mutation \(index))")
            }
            if entry.outcome.isAtomicRejected {
                throw WireError.invalidRequest("atomic_batch_rejected_mutation_reused (mutation \(index))")
            }
            outcomes[index] = entry.outcome
        }
        return outcomes
    }
}
