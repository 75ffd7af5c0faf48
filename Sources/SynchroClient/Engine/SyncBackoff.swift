import SQLiteKit
import SynchroStore
import SynchroProtocol

/// The durable retry record of `_synchro_backoff` (`spec/client-store.md` §4.11, §12; `spec/wire-protocol.md`
/// §10.3 "Backoff and restart"): which interrupted work waits, why, how often it failed and when it may run again.
/// A new engine on the same file waits for ``nextRetryAtMilliseconds`` before any request.
///
/// The exact work identity (a request body or a batch ID) is kept in the store but not exposed: a request body
/// carries cursors and tokens.
public struct SyncBackoff: Sendable, Equatable {
    /// The interrupted work.
    public enum ResumeState: String, Sendable, CaseIterable {
        /// `POST /sync/connect`.
        case connecting
        /// One sealed batch.
        case pushing
        /// One pull page request.
        case pulling
        /// One rebuild page request.
        case rebuilding
    }

    /// Why it is retried.
    public enum Classification: String, Sendable, CaseIterable {
        /// No response arrived (transport failure, timeout, lost response).
        case network
        /// 429 `retry_later`.
        case http429 = "http_429"
        /// 503 `temporary_unavailable` or `capture_pending`.
        case http503 = "http_503"

        init(status: Int?) {
            switch status {
            case 429?: self = .http429
            case 503?: self = .http503
            default: self = .network
            }
        }

        /// The HTTP status of the failure, nil for a network failure.
        public var status: Int? {
            switch self {
            case .network: nil
            case .http429: 429
            case .http503: 503
            }
        }
    }

    /// The interrupted work.
    public let resumeState: ResumeState
    /// Why it is retried.
    public let classification: Classification
    /// Consecutive failures of the same work (same resume state and identity); reset when either differs.
    public let attemptCount: Int
    /// The earliest time of the next attempt, Unix epoch milliseconds.
    public let nextRetryAtMilliseconds: Int64

    /// Creates a record.
    public init(
        resumeState: ResumeState, classification: Classification, attemptCount: Int, nextRetryAtMilliseconds: Int64
    ) {
        self.resumeState = resumeState
        self.classification = classification
        self.attemptCount = attemptCount
        self.nextRetryAtMilliseconds = nextRetryAtMilliseconds
    }
}

extension ClientStore {
    /// The stored retry record, if any.
    public func backoff() throws(ClientStoreError) -> SyncBackoff? {
        try withEngine { (connection) throws(ClientStoreError) -> SyncBackoff? in
            try mappingStoreErrors { try BackoffStore.load(on: connection)?.record }
        }
    }
}

/// Reads and writes of the `_synchro_backoff` singleton.
enum BackoffStore {
    /// The stored record with its work identity.
    struct Stored {
        let record: SyncBackoff
        let workIdentity: String
    }

    static func load(on connection: Connection) throws -> Stored? {
        try connection.query("""
            SELECT resume_state, work_identity, retry_classification, attempt_count, next_retry_at_ms
            FROM _synchro_backoff WHERE singleton = 1
            """) { row -> Stored? in
            guard let state = SyncBackoff.ResumeState(rawValue: try row.text(at: 0)),
                let classification = SyncBackoff.Classification(rawValue: try row.text(at: 2))
            else { return nil }
            return Stored(
                record: SyncBackoff(
                    resumeState: state, classification: classification, attemptCount: Int(row.int64(at: 3)),
                    nextRetryAtMilliseconds: row.int64(at: 4)),
                workIdentity: try row.text(at: 1))
        }.first ?? nil
    }

    /// Records one more failure of `workIdentity` in `state` in one transaction: the attempt count continues when
    /// the stored record names the same work, else restarts at 1; the deadline follows `policy`, `Retry-After`
    /// and the jitter. Returns the record and the delay it waits.
    static func recordFailure(
        state: SyncBackoff.ResumeState, workIdentity: String, status: Int?, retryAfter: Duration?,
        policy: SyncRetryPolicy, random: Double, now: Int64, in store: ClientStore
    ) throws(SyncError) -> (record: SyncBackoff, delay: Duration) {
        try store.applySync { connection in
            let previous = try load(on: connection)
            let continues = previous.map {
                $0.record.resumeState == state && $0.workIdentity.exactlyEquals(workIdentity)
            } ?? false
            let attempt = continues ? (previous?.record.attemptCount ?? 0) + 1 : 1
            let delay = policy.delay(afterAttempt: attempt, retryAfter: retryAfter, random: random)
            let record = SyncBackoff(
                resumeState: state, classification: SyncBackoff.Classification(status: status),
                attemptCount: attempt, nextRetryAtMilliseconds: SyncRetryPolicy.deadline(now: now, delay: delay))
            try connection.run("""
                INSERT INTO _synchro_backoff
                    (singleton, resume_state, work_identity, retry_classification, attempt_count, next_retry_at_ms)
                VALUES (1, ?, ?, ?, ?, ?)
                ON CONFLICT (singleton) DO UPDATE SET resume_state = excluded.resume_state,
                    work_identity = excluded.work_identity, retry_classification = excluded.retry_classification,
                    attempt_count = excluded.attempt_count, next_retry_at_ms = excluded.next_retry_at_ms
                """, [
                    .text(state.rawValue), .text(workIdentity), .text(record.classification.rawValue),
                    .integer(Int64(attempt)), .integer(record.nextRetryAtMilliseconds),
                ])
            return (record, delay)
        }
    }

    /// Clears the record of `state` when it names exactly `workIdentity` (the work just completed).
    static func clear(_ state: SyncBackoff.ResumeState, workIdentity: String, on connection: Connection) throws {
        try connection.run(
            "DELETE FROM _synchro_backoff WHERE resume_state = ? AND work_identity = ?",
            [.text(state.rawValue), .text(workIdentity)])
    }

    /// After a connect is installed (same transaction): a `connecting` record is done; a saved pull request
    /// survives only while it is still the request local state makes, and a saved rebuild request only while it
    /// is still the next request of a stored attempt (`spec/wire-protocol.md` §10.3).
    static func retireAfterConnect(on connection: Connection, context: SyncContext) throws {
        guard let stored = try load(on: connection) else { return }
        let current: [String]
        switch stored.record.resumeState {
        case .pushing:
            return
        case .connecting:
            current = []
        case .pulling:
            let request = try? PullApplier.requestJSON(on: connection, limit: context.pageLimit)
            current = request.map { [$0] } ?? []
        case .rebuilding:
            let clientID = try ClientIdentity.bound(on: connection)
            current = try RebuildApplier.attempts(on: connection).compactMap {
                try? RebuildApplier.requestJSON(for: $0, clientID: clientID)
            }
        }
        guard !current.contains(where: { $0.exactlyEquals(stored.workIdentity) }) else { return }
        try connection.run("DELETE FROM _synchro_backoff WHERE singleton = 1")
    }
}
