import SQLiteKit
import SynchroProtocol

/// The first execution of a batch that passed every gate (`spec/wire-protocol.md` §4.4–§4.6): source
/// writes, captures, outcomes, the ledger with the exact response, and the client's accepted-write
/// epoch and fence commit in ONE transaction; any failure rolls all of it back.
struct PushFirstExecution {
    let request: PushRequest
    let batchFingerprint: [UInt8]
    let mutationFingerprints: [PushFingerprint]
    /// Outcomes that unchanged completed mutations contribute without re-execution, by position.
    let reused: [Int: PushOutcome]
    let context: EndpointContext

    func run(store: ServerStore, current: SchemaManifest) throws -> EndpointReply {
        let db = store.db
        let serverTime = context.serverTime
        let evaluator = PushFieldEvaluator(
            current: current, dataset: context.configuration.dataset, user: context.user,
            history: ManifestHistory(store: store, current: current), timestamp: serverTime)
        let ledger = PushLedger(db: db, user: context.user, clientID: request.clientID)

        return try db.transaction {
            let executor = PushExecutor(evaluator: evaluator, store: store)
            let outcomes = request.isAtomic
                ? try executeAtomic(executor, db: db) : try executeEach(executor)
            let body = try PushResponseBody.encode(batchID: request.batchID, serverTime: serverTime, outcomes: outcomes)
            for (index, mutation) in request.mutations.enumerated() where reused[index] == nil {
                try ledger.recordMutation(
                    mutation.mutationID, fingerprint: mutationFingerprints[index].digest, batchID: request.batchID,
                    outcome: outcomes[index])
            }
            try ledger.recordBatch(request.batchID, fingerprint: batchFingerprint, status: 200, body: body)
            if let lsn = executor.lastCaptureLSN {
                guard var client = try ClientRecord.load(user: context.user, client: request.clientID, from: db) else {
                    throw PushIntegrityError.missingClient
                }
                client.acceptedWriteEpoch += 1
                client.pendingFenceLSN = lsn
                try client.save(to: db)
            }
            return EndpointReply(status: 200, body: body)
        }
    }

    /// Non-atomic: every new mutation is its own push unit, in request order.
    private func executeEach(_ executor: PushExecutor) throws -> [PushOutcome] {
        var outcomes: [PushOutcome] = []
        outcomes.reserveCapacity(request.mutations.count)
        for (index, mutation) in request.mutations.enumerated() {
            if let stored = reused[index] {
                outcomes.append(stored)
            } else {
                outcomes.append(try executor.execute(mutation).outcome)
            }
        }
        return outcomes
    }

    /// Atomic (§4.5): the group runs in a savepoint and stops at the first outcome that is not
    /// `applied`; then the savepoint rolls back, the failing mutation keeps its own outcome (a
    /// conflict re-read from committed state) and every other one is `atomic_batch_rejected`.
    private func executeAtomic(_ executor: PushExecutor, db: any StoreExecutor) throws -> [PushOutcome] {
        var applied: [PushOutcome] = []
        do {
            try db.savepoint("push_atomic_group") {
                for (index, mutation) in request.mutations.enumerated() {
                    let executed = try executor.execute(mutation)
                    guard executed.outcome.isAccepted else {
                        throw AtomicGroupRollback(index: index, executed: executed)
                    }
                    applied.append(executed.outcome)
                }
            }
            return applied
        } catch let failure as AtomicGroupRollback {
            executor.discardWrites()
            let failing = try failure.executed.conflict.map(executor.reportAfterRollback) ?? failure.executed.outcome
            return try request.mutations.enumerated().map { index, mutation in
                index == failure.index ? failing : try .atomicRejected(mutation, requestSchema: request.schema)
            }
        }
    }
}

/// Thrown inside the atomic savepoint to roll the group back; carries the failing mutation.
private struct AtomicGroupRollback: Error {
    let index: Int
    let executed: ExecutedMutation
}

/// The push response body (`spec/wire-protocol.md` §4.4) in RFC 8785 form, assembled from the
/// outcomes' stored octets so that a reused outcome appears byte for byte as first recorded.
enum PushResponseBody {
    static func encode(batchID: String, serverTime: String, outcomes: [PushOutcome]) throws -> [UInt8] {
        var body: [UInt8] = []
        body.reserveCapacity(outcomes.reduce(128) { $0 + $1.bytes.count + 1 })
        // RFC 8785 member order: accepted, batch_id, rejected, server_time.
        body.append(contentsOf: Array(#"{"accepted":"#.utf8))
        append(outcomes.filter(\.isAccepted), to: &body)
        body.append(contentsOf: Array(#","batch_id":"#.utf8))
        try CanonicalJSON.appendString(batchID, to: &body)
        body.append(contentsOf: Array(#","rejected":"#.utf8))
        append(outcomes.filter { !$0.isAccepted }, to: &body)
        body.append(contentsOf: Array(#","server_time":"#.utf8))
        try CanonicalJSON.appendString(serverTime, to: &body)
        body.append(UInt8(ascii: "}"))
        return body
    }

    private static func append(_ outcomes: [PushOutcome], to body: inout [UInt8]) {
        body.append(UInt8(ascii: "["))
        for (index, outcome) in outcomes.enumerated() {
            if index > 0 { body.append(UInt8(ascii: ",")) }
            body.append(contentsOf: outcome.bytes)
        }
        body.append(UInt8(ascii: "]"))
    }
}
