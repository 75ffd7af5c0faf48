import SQLiteKit
import SynchroStore

/// The client-owned sync lifecycle of a ``SynchroDatabase``: start, stop, pause, resume, wake, close and the
/// explicit recoveries, and the cycles they schedule.
extension SynchroDatabase {
    /// Arms the client-owned sync lifecycle: a cycle now, then one every ``SynchroDatabaseConfiguration/syncInterval``,
    /// retries at their durable deadlines, until ``stopSync()``. Refused while a blocking error is stored (its
    /// recovery action comes first). Starting again after an error is the explicit `error → local_ready`.
    /// Idempotent while started, paused included: a paused lifecycle stays paused until ``resume()``.
    public func startSync() throws(SynchroDatabaseError) {
        try requireOutsideApplicationTransaction()
        if let blocking = try blockingError() {
            throw .syncBlocked(
                operation: blocking.operation, code: blocking.code, recoveryAction: blocking.recoveryAction)
        }
        try arm(reset: false)
    }

    /// Stops network work: the running cycle stops at its next step boundary and nothing more is scheduled.
    /// Durable state (queue, batches, cursors, checksums, rebuild attempts, retry record) is untouched, and
    /// local writes keep being captured. A pause ends too: the lifecycle is no longer started.
    public func stopSync() throws(SynchroDatabaseError) {
        try requireOutsideApplicationTransaction()
        try halt(pausing: false)
    }

    /// Pauses the started lifecycle (seed 002, "Work offline"): like ``stopSync()`` for the network — the
    /// running cycle stops at its next step boundary, nothing is scheduled, `wake()` does nothing — but sync
    /// stays started, local writes keep being captured and queued, and ``resume()`` delivers them. Idempotent;
    /// fails with `syncNotStarted` when sync is not started.
    public func pause() throws(SynchroDatabaseError) {
        try requireOutsideApplicationTransaction()
        try halt(pausing: true)
    }

    /// Ends a pause: a cycle now, which connects again (a pause ends the connection), then the lifecycle as
    /// before. Does nothing when not paused.
    public func resume() throws(SynchroDatabaseError) {
        try requireOutsideApplicationTransaction()
        let resumed = try lifecycle.withLock { (lifecycle: inout Lifecycle) throws(SynchroDatabaseError) -> Bool in
            guard !lifecycle.closed else { throw .closed }
            defer { lifecycle.paused = false }
            return lifecycle.paused
        }
        if resumed { try arm(reset: false) }
    }

    /// Prompts scheduling (seed 002, "Connection failures"): a cycle now — after the running one, if any — when
    /// sync is started and not paused; otherwise nothing (a hint, never an error). A stored retry deadline is
    /// still honoured by the cycle. Returns whether a cycle was requested.
    @discardableResult
    public func wake() throws(SynchroDatabaseError) -> Bool {
        try requireOutsideApplicationTransaction()
        return try requestCycle(strict: false)
    }

    /// Requests an immediate cycle through the scheduler (after the running one, if any). Fails with
    /// `syncNotStarted` or `syncPaused` when no cycle may run.
    public func syncNow() throws(SynchroDatabaseError) {
        try requireOutsideApplicationTransaction()
        try requestCycle(strict: true)
    }

    /// Stops sync, fails every pending ``settlement(of:)`` with `closed`, closes the store and releases the
    /// owner lock, so another owner may open the file at once. Idempotent; later calls fail with `closed`.
    public func close() {
        let (signal, task) = lifecycle.withLock { lifecycle in
            defer {
                lifecycle.signal = nil
                lifecycle.scheduled = nil
                lifecycle.paused = false
                lifecycle.closed = true
            }
            return (lifecycle.signal, lifecycle.scheduled)
        }
        signal?.stop()
        task?.cancel()
        stateObservation.withLock { $0?.cancel() }
        settlementWaiters.close()
        // The engine lock orders this after any transaction a finishing cycle is in; later steps fail `closed`.
        store.close()
    }

    /// The explicit recovery of an `unsupported` schema by an upgraded application (`spec/wire-protocol.md`
    /// §3.7, §10.3): arms sync whose next cycle connects with `schema_reset` (``SyncCycle/runSchemaReset()``).
    public func resetSchema() throws(SynchroDatabaseError) {
        try requireOutsideApplicationTransaction()
        guard try blockingError()?.recoveryAction == "schema_reset" else { throw .schemaResetNotPending }
        try stopSync()
        try arm(reset: true)
    }

    /// The explicit `retry` recovery (`spec/wire-protocol.md` §10.2): clears a stored blocking error whose
    /// recovery action is `retry` (``SyncCycle/acknowledgeBlockingError()``) and arms sync. A stored error that
    /// needs another action is refused with ``SynchroDatabaseError/syncBlocked(operation:code:recoveryAction:)``
    /// and stays; with no error stored this only arms sync.
    public func retryAfterError() throws(SynchroDatabaseError) {
        try requireOutsideApplicationTransaction()
        do {
            _ = try SyncCycle(context: makeContext(), delay: { _ in }).acknowledgeBlockingError()
        } catch .blocked(let operation, let code, let recoveryAction) {
            throw .syncBlocked(operation: operation, code: code, recoveryAction: recoveryAction)
        } catch .sync(_, .store(let error)) {
            throw error == .closed ? .closed : .store(error)
        } catch {
            throw .store(.sqlite(SQLiteError(reason: .sqlite, code: .error, message: error.description)))
        }
        try stopSync()
        try arm(reset: false)
    }

    // MARK: - Cycles

    /// Stops the running lifecycle's network work; `pausing` keeps it started (and requires it started).
    private func halt(pausing: Bool) throws(SynchroDatabaseError) {
        let (signal, task, running) = try lifecycle.withLock {
            (lifecycle: inout Lifecycle) throws(SynchroDatabaseError) in
            if pausing {
                guard !lifecycle.closed else { throw .closed }
                guard lifecycle.signal != nil || lifecycle.paused else { throw .syncNotStarted }
            }
            defer {
                lifecycle.signal = nil
                lifecycle.scheduled = nil
                lifecycle.rerun = false
                lifecycle.paused = pausing
            }
            return (lifecycle.signal, lifecycle.scheduled, lifecycle.running)
        }
        signal?.stop()
        task?.cancel()
        // A running cycle moves itself to `stopped` at its next step (or when it ends); an idle client moves now.
        if !running, status.state != .stopped { try? status.transition(to: .stopped) }
        publishStatus()
    }

    /// Schedules a cycle now on the current lifecycle, or marks the running one for a rerun. `strict` turns
    /// "no cycle may run" into an error; otherwise it returns false.
    @discardableResult
    private func requestCycle(strict: Bool) throws(SynchroDatabaseError) -> Bool {
        let (requested, signal) = try lifecycle.withLock {
            (lifecycle: inout Lifecycle) throws(SynchroDatabaseError) -> (Bool, SyncStopSignal?) in
            guard !lifecycle.closed else { throw .closed }
            guard let signal = lifecycle.signal else {
                guard strict else { return (false, nil) }
                throw lifecycle.paused ? .syncPaused : .syncNotStarted
            }
            if lifecycle.running {
                lifecycle.rerun = true
                return (true, nil)
            }
            lifecycle.scheduled?.cancel()
            return (true, signal)
        }
        if let signal { schedule(after: .zero, signal: signal) }
        return requested
    }

    /// Starts a new lifecycle (idempotent while started or paused) and schedules a cycle now.
    private func arm(reset: Bool) throws(SynchroDatabaseError) {
        let signal = try lifecycle.withLock {
            (lifecycle: inout Lifecycle) throws(SynchroDatabaseError) -> SyncStopSignal? in
            guard !lifecycle.closed else { throw .closed }
            lifecycle.resetRequested = lifecycle.resetRequested || reset
            guard lifecycle.signal == nil, !lifecycle.paused else { return nil }
            let signal = SyncStopSignal()
            lifecycle.signal = signal
            return signal
        }
        if let signal { schedule(after: .zero, signal: signal) }
    }

    private func schedule(after delay: Duration, signal: SyncStopSignal) {
        let task = configuration.scheduler.schedule(after: delay) { [weak self] in self?.runCycle(signal: signal) }
        lifecycle.withLock { lifecycle in
            if lifecycle.signal === signal { lifecycle.scheduled = task } else { task.cancel() }
        }
    }

    /// One cycle of the lifecycle armed with `signal`, then the next one scheduled.
    private func runCycle(signal: SyncStopSignal) {
        let reset = lifecycle.withLock { lifecycle -> Bool? in
            guard lifecycle.signal === signal, !lifecycle.running else {
                if lifecycle.signal === signal { lifecycle.rerun = true }
                return nil
            }
            lifecycle.running = true
            lifecycle.scheduled = nil
            defer { lifecycle.resetRequested = false }
            return lifecycle.resetRequested
        }
        guard let reset else { return }
        let cycle = makeCycle(signal: signal)
        var failure: SyncCycleError?
        var summary: SyncSummary?
        do {
            // A cycle of a lifecycle still connected (`ready`) goes straight to its work (`runConnected()`).
            summary = reset ? try cycle.runSchemaReset() : try cycle.runConnected()
        } catch {
            failure = error
        }
        let (rerun, current) = lifecycle.withLock { lifecycle -> (Bool, SyncStopSignal?) in
            lifecycle.running = false
            lifecycle.lastError = failure
            if let summary { lifecycle.lastSummary = summary }
            defer { lifecycle.rerun = false }
            return (lifecycle.rerun, lifecycle.signal)
        }
        if let failure { eventObservers.notify(.failed(failure)) }
        // A stop or pause that came after the cycle's last step boundary still ends the connection.
        if signal.isStopped, status.state != .stopped { try? status.transition(to: .stopped) }
        sweepSettlements()
        publishStatus()
        guard !signal.isStopped else {
            // A start or resume during this cycle asked for a cycle of its own lifecycle; it runs now.
            if rerun, let current, current !== signal { schedule(after: .zero, signal: current) }
            return
        }
        guard let next = nextDelay(after: failure, rerun: rerun) else { return }
        schedule(after: next, signal: signal)
    }

    /// When the next cycle runs: now after a `syncNow()` during the cycle, at the durable retry deadline after
    /// retries ran out, after the interval after success; never after a non-retryable error (a timer cannot
    /// leave `error`, `spec/wire-protocol.md` §10.2) or a stop.
    private func nextDelay(after failure: SyncCycleError?, rerun: Bool) -> Duration? {
        if rerun { return .zero }
        guard let failure else { return configuration.syncInterval }
        guard case .retriesExhausted = failure else { return nil }
        let deadline = (try? store.backoff())?.nextRetryAtMilliseconds ?? 0
        return .milliseconds(max(0, deadline - configuration.clock.nowMilliseconds()))
    }

    private func makeContext() -> SyncContext {
        SyncContext(
            store: store, transport: configuration.transport, platform: configuration.platform,
            appVersion: configuration.appVersion, pageLimit: configuration.pageLimit)
    }

    private func makeCycle(signal: SyncStopSignal) -> SyncCycle {
        let scheduler = configuration.scheduler
        let events = eventObservers
        let context = makeContext()
        return SyncCycle(
            context: context, configuration: configuration.cycle,
            delay: { duration in scheduler.wait(for: duration, signal: signal) },
            events: { event in events.notify(event) }, random: configuration.random,
            isCancelled: { signal.isStopped }, status: status)
    }

    func publishStatus() {
        statusObservers.notify(getSyncStatus())
    }
}
