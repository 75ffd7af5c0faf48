import SynchroStore
import SQLiteKit
import SynchroProtocol

extension CycleRun {
    /// Runs one exchange, repeating it after retryable failures as the policy allows.
    func retrying<Value>(
        _ phase: SyncPhase, _ body: () throws(SyncError) -> Value
    ) throws(SyncCycleError) -> Value {
        var attempt = 0
        while true {
            attempt += 1
            do {
                return try body()
            } catch {
                switch error {
                case .retryLater(let status, _):
                    try scheduleRetry(phase, attempt: attempt, status: status)
                case .transport(let failure) where failure.isRetryable:
                    try scheduleRetry(phase, attempt: attempt, status: nil, failure: failure)
                case .http(let status, let code):
                    // The identity switch counts as an attempt, so a server that refuses every first connect
                    // cannot make a cycle churn through identities.
                    if phase == .connect, attempt < configuration.retry.maxAttempts,
                       try leaveUnheldIdentity(status: status, code: code) {
                        continue
                    }
                    try refuse(phase, status: status, code: code)
                    throw .sync(phase: phase, error)
                default:
                    throw .sync(phase: phase, error)
                }
            }
        }
    }

    /// A non-retryable row of the dispatch table (``SyncRefusal``) is stored as the blocking error before the
    /// cycle fails, so no later run sends anything until its recovery is taken; other answers return.
    func refuse(_ phase: SyncPhase, status: Int, code: String?) throws(SyncCycleError) {
        guard let refusal = SyncRefusal.matching(status: status, code: code) else { return }
        try mapping(phase) { () throws(SyncError) in
            try BlockingErrorStore.record(refusal, operation: phase.rawValue, in: context.store)
        }
        throw .blocked(operation: phase.rawValue, code: refusal.code, recoveryAction: refusal.recoveryAction)
    }

    /// Records the failure durably, then waits before the next attempt, or fails once the policy's attempts of
    /// this cycle are used up or the wait is longer than the policy's ``SyncRetryPolicy/longestWait`` (a huge
    /// `Retry-After`): the record keeps the next eligible time for the next cycle, and nothing sleeps through it.
    func scheduleRetry(
        _ phase: SyncPhase, attempt: Int, status: Int?, failure: SyncTransportFailure? = nil
    ) throws(SyncCycleError) {
        let random = cycle.random.next()
        let retryAfter = transport.lastRetryAfter
        var wait = configuration.retry.delay(afterAttempt: attempt, retryAfter: retryAfter, random: random)
        var durableAttempt = attempt
        if let (state, identity) = try workIdentity(phase) {
            let recorded = try mapping(phase) { () throws(SyncError) in
                try BackoffStore.recordFailure(
                    state: state, workIdentity: identity, status: status, retryAfter: retryAfter,
                    policy: configuration.retry, random: random,
                    now: context.store.configuration.clock.nowMilliseconds(), in: context.store)
            }
            (wait, durableAttempt) = (recorded.delay, recorded.record.attemptCount)
            SyncCrashPoint.backoffRecorded.reached()
        }
        let interrupted = cycle.status.state
        try enter(.backoff)
        guard attempt < configuration.retry.maxAttempts, wait <= configuration.retry.longestWait else {
            throw .retriesExhausted(phase: phase, attempts: attempt, status: status, failure: failure)
        }
        summary.retries += 1
        events(.retryScheduled(phase: phase, attempt: durableAttempt, status: status, delay: wait, failure: failure))
        sleep(wait)
        try enter(interrupted)
    }

    /// Before any request: a stored retry deadline in the future is waited for (`spec/client-store.md` §11); one
    /// further ahead than ``SyncRetryPolicy/longestWait`` ends the run at once with retries exhausted, sending
    /// nothing and keeping the record.
    func honourStoredBackoff() throws(SyncCycleError) {
        let stored = try mapping(.connect) { () throws(SyncError) in
            try SyncExchange.mapping { try context.store.backoff() }
        }
        let now = context.store.configuration.clock.nowMilliseconds()
        guard let stored, stored.nextRetryAtMilliseconds > now else { return }
        let wait = Duration.milliseconds(stored.nextRetryAtMilliseconds - now)
        guard wait <= configuration.retry.longestWait else {
            throw .retriesExhausted(
                phase: Self.phase(of: stored.resumeState), attempts: stored.attemptCount,
                status: stored.classification.status)
        }
        summary.retries += 1
        events(.retryScheduled(
            phase: Self.phase(of: stored.resumeState), attempt: stored.attemptCount,
            status: stored.classification.status, delay: wait))
        sleep(wait)
    }

    /// The resume state and exact work identity of the request that just failed in `phase`: the request body,
    /// or for push the pending batch ID. Nil when there is nothing to identify (renewal sends nothing).
    private func workIdentity(_ phase: SyncPhase) throws(SyncCycleError) -> (SyncBackoff.ResumeState, String)? {
        let state: SyncBackoff.ResumeState
        switch phase {
        case .connect: state = .connecting
        case .pull: state = .pulling
        case .rebuild: state = .rebuilding
        case .renew: return nil
        case .push:
            let batch = try mapping(.push) { () throws(SyncError) in
                try context.store.readSyncState { connection in
                    try connection.scalar(
                        "SELECT batch_id FROM _synchro_push_batches WHERE state = 'pending'")?.textValue
                }
            }
            return batch.map { (.pushing, $0) }
        }
        let body = transport.lastRequestBody
        return body.isEmpty ? nil : (state, String(decoding: body, as: UTF8.self))
    }

    /// Hands `duration` to the injected delay in pieces of at most one day (upstream chunks long sleeps).
    private func sleep(_ duration: Duration) {
        let day = Duration.seconds(86_400)
        var remaining = duration
        while remaining > day, !cycle.isCancelled() {
            cycle.delay(day)
            remaining -= day
        }
        if remaining > .zero, !cycle.isCancelled() { cycle.delay(remaining) }
    }

    private static func phase(of state: SyncBackoff.ResumeState) -> SyncPhase {
        switch state {
        case .connecting: .connect
        case .pushing: .push
        case .pulling: .pull
        case .rebuilding: .rebuild
        }
    }
}
