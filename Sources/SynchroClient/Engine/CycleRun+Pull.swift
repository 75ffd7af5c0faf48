import SynchroStore
import SynchroProtocol

extension CycleRun {
    /// Pulls pages until a terminal page; returns the scopes it left rebuild-required. Ends in `ready` when none
    /// is, and stays in `pulling` otherwise (the rebuild follows directly, §10.3).
    func pull() throws(SyncCycleError) -> [String] {
        try enter(.pulling)
        events(.phaseStarted(.pull))
        let applier = PullApplier(context: context)
        var pages = 0
        while true {
            guard pages < configuration.maxPages else {
                throw .pageLimit(phase: .pull, pages: pages)
            }
            pages += 1
            let outcome = try retrying(.pull) { () throws(SyncError) in try applier.runPage() }
            summary.rowsApplied += outcome.rows
            events(.pageApplied(phase: .pull, scope: nil, rows: outcome.rows))
            for scope in outcome.verifiedScopes { verified.insert(scope) }
            guard !outcome.hasMore else {
                try enter(.pulling)
                continue
            }
            if outcome.rebuildRequired.isEmpty { try enter(.ready) }
            events(.phaseFinished(.pull))
            return outcome.rebuildRequired
        }
    }
}
