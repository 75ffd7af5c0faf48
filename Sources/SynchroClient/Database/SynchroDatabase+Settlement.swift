import SQLiteKit
import SynchroProtocol
import SynchroStore
import Synchronization

/// How one authored mutation ended (``SynchroDatabase/settlement(of:)``), with the outcome the store recorded.
/// The JSON is the exact object the server returned and may carry row values: it is for the application, and
/// the type has no description that would print it.
public enum MutationSettlement: Sendable, Equatable {
    /// The server applied it; the exact accepted outcome JSON.
    case accepted(outcomeJSON: String)
    /// The server refused it with `conflict`; the exact rejection JSON (with the server's row when it sent one).
    case conflict(rejectionJSON: String)
    /// The server refused it with `rejected_terminal`; the exact rejection JSON.
    case rejectedTerminal(rejectionJSON: String)
    /// It ended locally without a server answer (`exceeds_push_limit`, `cancelled_before_send`).
    case localTerminal(MutationLifecycleState)
}

extension SynchroDatabase {
    /// Waits until the authored mutation `mutationID` settles and returns how (seed 002, "Submit and settle"):
    /// at once when it already has; otherwise after the cycle that settles it commits. A mutation merged into a
    /// normalized successor settles with that successor. Fails with
    /// ``SynchroDatabaseError/unknownMutation(mutationID:)`` for an ID the ledger does not hold, with `closed`
    /// when the database closes first, and with `settlementCancelled` when the awaiting task is cancelled.
    /// Waiting neither starts sync nor sends anything: a paused or stopped database keeps the caller waiting.
    public func settlement(of mutationID: String) async throws(SynchroDatabaseError) -> MutationSettlement {
        if let settled = try settledOutcome(of: mutationID) { return settled }
        let waiters = settlementWaiters
        let token = waiters.reserve()
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                waiters.add(token, mutationID: mutationID, continuation)
                // A cycle that settled it between the read above and the registration swept no waiter: look again.
                sweepSettlements()
            }
        } onCancel: {
            waiters.finish(token, .failure(.settlementCancelled))
        }
        return try result.get()
    }

    /// How many ``settlement(of:)`` calls are waiting: lets a test see a wait registered without sleeping.
    package var pendingSettlementCount: Int { settlementWaiters.pending.count }

    /// Resumes every waiter whose mutation has settled; called after each cycle and on registration.
    func sweepSettlements() {
        for (token, mutationID) in settlementWaiters.pending {
            do {
                if let settled = try settledOutcome(of: mutationID) { settlementWaiters.finish(token, .success(settled)) }
            } catch {
                settlementWaiters.finish(token, .failure(error))
            }
        }
    }

    /// The settlement of `mutationID` as stored, following normalization to the successor; nil while unresolved.
    func settledOutcome(of mutationID: String) throws(SynchroDatabaseError) -> MutationSettlement? {
        let stored = try engineRead { connection -> StoredSettlement? in
            var id = mutationID
            // A chain of merges is finite (each successor is a later entry); the bound only guards a corrupt file.
            for _ in 0..<64 {
                let rows = try connection.rows("""
                    SELECT lifecycle_state, normalized_mutation_id, accepted_json, rejected_json
                    FROM _synchro_pending_changes WHERE mutation_id = ?
                    """, [.text(id)])
                guard let row = rows.first else { return id == mutationID ? .unknown : nil }
                let state = row[0].textValue ?? ""
                if state == MutationLifecycleState.supersededBeforeSend.rawValue, let next = row[1].textValue {
                    id = next
                    continue
                }
                return .entry(state: state, accepted: row[2].textValue, rejected: row[3].textValue)
            }
            return nil
        }
        switch stored {
        case nil: return nil
        case .unknown: throw .unknownMutation(mutationID: mutationID)
        case .entry(let state, let accepted, let rejected): return Self.settlement(state, accepted, rejected)
        }
    }

    private enum StoredSettlement: Sendable {
        case unknown
        case entry(state: String, accepted: String?, rejected: String?)
    }

    private static func settlement(_ state: String, _ accepted: String?, _ rejected: String?) -> MutationSettlement? {
        switch MutationLifecycleState(rawValue: state) {
        case .accepted: return accepted.map { .accepted(outcomeJSON: $0) }
        case .rejected:
            guard let rejected else { return nil }
            let status = (try? StrictJSONParser().parse(Array(rejected.utf8)))?.objectValue?["status"]?.stringValue
            return status == "conflict" ? .conflict(rejectionJSON: rejected) : .rejectedTerminal(rejectionJSON: rejected)
        case .exceedsPushLimit: return .localTerminal(.exceedsPushLimit)
        case .cancelledBeforeSend: return .localTerminal(.cancelledBeforeSend)
        default: return nil
        }
    }
}

/// The callers awaiting settlements: each resumed exactly once — settled, failed, cancelled or closed.
final class SettlementWaiters: Sendable {
    typealias Continuation = CheckedContinuation<Result<MutationSettlement, SynchroDatabaseError>, Never>

    private struct State {
        var nextToken = 0
        var waiting: [Int: (mutationID: String, continuation: Continuation)] = [:]
        /// Tokens finished before their continuation was added (a cancellation that raced the registration).
        var finishedEarly: [Int: Result<MutationSettlement, SynchroDatabaseError>] = [:]
        var closed = false
    }

    private let state = Mutex(State())

    /// A token for one wait.
    func reserve() -> Int {
        state.withLock { state in
            defer { state.nextToken += 1 }
            return state.nextToken
        }
    }

    /// Registers a waiter; resumes it at once when it was already finished or the database is closed.
    func add(_ token: Int, mutationID: String, _ continuation: Continuation) {
        let early = state.withLock { state -> Result<MutationSettlement, SynchroDatabaseError>? in
            if let early = state.finishedEarly.removeValue(forKey: token) { return early }
            if state.closed { return .failure(.closed) }
            state.waiting[token] = (mutationID, continuation)
            return nil
        }
        if let early { continuation.resume(returning: early) }
    }

    /// The waiting tokens and their mutation IDs.
    var pending: [(Int, String)] {
        state.withLock { $0.waiting.map { ($0.key, $0.value.mutationID) } }
    }

    /// Resumes `token` with `result` unless it was resumed already.
    func finish(_ token: Int, _ result: Result<MutationSettlement, SynchroDatabaseError>) {
        let continuation = state.withLock { state -> Continuation? in
            guard let waiter = state.waiting.removeValue(forKey: token) else {
                if token < state.nextToken { state.finishedEarly[token] = result }
                return nil
            }
            return waiter.continuation
        }
        continuation?.resume(returning: result)
    }

    /// Fails every waiter with `closed`, now and for any registered later.
    func close() {
        let waiting = state.withLock { state in
            state.closed = true
            defer { state.waiting = [:] }
            return Array(state.waiting.values)
        }
        for waiter in waiting { waiter.continuation.resume(returning: .failure(.closed)) }
    }
}
