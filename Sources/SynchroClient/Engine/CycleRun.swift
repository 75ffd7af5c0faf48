import SynchroStore
import SynchroProtocol

/// The mutable state of one running cycle.
final class CycleRun {
    let cycle: SyncCycle
    let transport: MeteredTransport
    let context: SyncContext
    var summary = SyncSummary()
    var verified: Set<String> = []

    /// Scopes to restart once after push (`.some(nil)`: every scope); nil for a normal cycle.
    private var explicitRebuild: [String]??
    /// Whether the next connect is the explicit schema reset.
    var schemaReset: Bool
    /// Whether a connection left standing by the previous run (state `ready`) is used instead of a new connect.
    private let reuseConnection: Bool

    init(
        cycle: SyncCycle, explicitRebuild: [String]?? = nil, schemaReset: Bool = false, reuseConnection: Bool = false
    ) {
        self.cycle = cycle
        self.reuseConnection = reuseConnection
        self.explicitRebuild = explicitRebuild
        self.schemaReset = schemaReset
        let base = cycle.context
        transport = MeteredTransport(base.transport, clock: base.store.configuration.clock)
        context = SyncContext(
            store: base.store, transport: transport, platform: base.platform, appVersion: base.appVersion,
            pageLimit: base.pageLimit)
    }

    var configuration: SyncCycle.Configuration { cycle.configuration }

    func run() throws(SyncCycleError) {
        summary.states = [cycle.status.state]
        // Checked before anything is read or sent: a limit outside the wire range is never clamped (contract,
        // "Native backoff": "rejects an invalid local limit before transmission").
        guard ExactObjectReader.pageLimit.contains(context.pageLimit) else {
            throw .invalidPageLimit(limit: context.pageLimit, allowed: ExactObjectReader.pageLimit)
        }
        // A reset interrupted after it was applied still counts: running the same command again finishes it.
        if schemaReset, try !resetPending(), try !resetApplied() { throw .schemaResetNotPending }
        try refuseWhileBlocked()
        let connected = reuseConnection && !schemaReset && cycle.status.state == .ready
        if [.uninitialized, .error, .stopped].contains(cycle.status.state) {
            try enter(.localReady)
        }
        // Indexes an interrupted rebuild left deferred are built before anything else reads or changes the schema.
        try mapping(.connect) { () throws(SyncError) in
            try SyncExchange.mapping { try context.store.restoreDeferredIndexes() }
        }
        // An interrupted schema migration is resumed (or rolled back) before any request (client-store §11).
        try mapping(.connect) { () throws(SyncError) in _ = try SchemaMigrationJournal.recover(in: context.store) }
        // A resumed reset already recovered the error: the connect is then an ordinary one.
        if schemaReset, try !resetPending() { schemaReset = false }
        try honourStoredBackoff()
        if !connected { try connect() }
        var reconnects = 0
        while true {
            do throws(SyncCycleError) {
                try pushRebuildPull()
                // A migration whose affected scopes all verified again is finished.
                try mapping(.pull) { () throws(SyncError) in
                    try SchemaMigrationJournal.clearIfFinished(in: context.store)
                }
                return
            } catch {
                guard let (phase, code) = Self.reconnectReason(error) else { throw error }
                guard reconnects < configuration.maxReconnects else {
                    throw .reconnectLimit(phase: phase, code: code)
                }
                reconnects += 1
                try connect()
            }
        }
    }

    /// After a failure: `error`, unless retries ran out (the cycle stays in `backoff`, or in `local_ready` when a
    /// stored deadline too far ahead ended it before any request: the durable record says when to resume).
    func fail(_ error: SyncCycleError) {
        if case .retriesExhausted = error { return }
        if case .cancelled = error {
            if cycle.status.state != .stopped { try? cycle.status.transition(to: .stopped) }
            return
        }
        if cycle.status.state != .error { try? enter(.error) }
    }

    func finishCounts() {
        summary.connectRequests = transport.requests("/sync/connect")
        summary.pushRequests = transport.requests("/sync/push")
        summary.pullRequests = transport.requests("/sync/pull")
        summary.rebuildRequests = transport.requests("/sync/rebuild")
        summary.scopesVerified = verified.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }

    /// The steps after connect; a generation or schema refusal surfaces for `run` to reconnect and repeat them.
    private func pushRebuildPull() throws(SyncCycleError) {
        try push()
        if let scopes = explicitRebuild {
            try restart(scopes)
            explicitRebuild = nil
        }
        try rebuild(try scopesWithoutCursor())
        var passes = 0
        while true {
            let required = try pull()
            guard !required.isEmpty else { return }
            guard passes < configuration.maxRebuildPasses else { throw .rebuildLimit(scope: required[0]) }
            passes += 1
            try rebuild(required)
        }
    }

    func events(_ event: SyncEvent) {
        cycle.events(event)
    }

    func mapping<Value>(
        _ phase: SyncPhase, _ body: () throws(SyncError) -> Value
    ) throws(SyncCycleError) -> Value {
        do {
            return try body()
        } catch {
            throw .sync(phase: phase, error)
        }
    }

    /// Moves the state machine, failing the cycle on a transition §10.2 forbids (an engine defect).
    func enter(_ state: SyncState) throws(SyncCycleError) {
        if state != .error, state != .stopped, cycle.isCancelled() { throw .cancelled }
        do {
            try cycle.status.transition(to: state)
        } catch {
            throw .illegalTransition(error)
        }
        if summary.states.last != state { summary.states.append(state) }
    }

    private static func reconnectReason(_ error: SyncCycleError) -> (SyncPhase, String)? {
        switch error {
        case .sync(let phase, .http(409, "client_generation_expired")): (phase, "client_generation_expired")
        case .sync(let phase, .http(422, "schema_mismatch")): (phase, "schema_mismatch")
        default: nil
        }
    }
}
