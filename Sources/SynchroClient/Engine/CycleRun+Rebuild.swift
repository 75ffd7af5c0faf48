import SynchroStore
import SQLiteKit
import SynchroProtocol

extension CycleRun {
    /// Rebuilds `scopes` one at a time, each until its final page verifies.
    func rebuild(_ scopes: [String]) throws(SyncCycleError) {
        guard !scopes.isEmpty else { return }
        try enter(.rebuilding)
        events(.phaseStarted(.rebuild))
        let applier = RebuildApplier(context: context)
        // The next page is requested while this one is applied; nothing is in flight once the rebuild returns.
        let ahead = RequestAhead<RebuildApplier.ReceivedPage>(isCancelled: cycle.isCancelled)
        defer { ahead.drain() }
        // A rebuild that ends before its finality (an error, a cancellation) leaves no index deferred for the
        // application to run without until the next cycle; a failure here is resolved by the next cycle or open.
        // Declared first, so it runs after the bulk apply ended (under the default page cache).
        defer { try? context.store.restoreDeferredIndexes() }
        // Pages commit without checkpointing; checkpoints run beside the engine (WALCheckpointer).
        let bulk = try mapping(.rebuild) { () throws(SyncError) in
            try SyncExchange.mapping { try context.store.beginBulkApply() }
        }
        defer { context.store.endBulkApply(bulk) }
        for scope in scopes {
            var restarts = 0
            events(.rebuildRequested(scope: scope))
            try mapping(.rebuild) { () throws(SyncError) in _ = try applier.start(scope: scope) }
            // The rows each page writes are read back beside the engine, for finality.
            var check = try mapping(.rebuild) { () throws(SyncError) in try applier.rowCheck(scope: scope) }
            var pages = 0
            while true {
                guard pages < configuration.maxPages else {
                    throw .pageLimit(phase: .rebuild, pages: pages)
                }
                pages += 1
                let isFinal: Bool
                let rows: Int
                do throws(SyncCycleError) {
                    (isFinal, rows) = try retrying(.rebuild) { () throws(SyncError) in
                        try applier.runPage(scope: scope, ahead: ahead, check: check)
                    }
                } catch {
                    guard Self.needsNewAttempt(error), restarts < configuration.maxRebuildRestarts else {
                        if Self.needsNewAttempt(error) { throw .rebuildLimit(scope: scope) }
                        throw error
                    }
                    restarts += 1
                    pages = 0
                    try newAttempt(scope: scope, applier: applier)
                    check = try mapping(.rebuild) { () throws(SyncError) in try applier.rowCheck(scope: scope) }
                    continue
                }
                context.store.boundLog(bulk)
                summary.rowsApplied += rows
                events(.pageApplied(phase: .rebuild, scope: scope, rows: rows))
                try enter(.rebuilding)
                if isFinal { break }
            }
            summary.scopesRebuilt.append(scope)
            verified.insert(scope)
            events(.scopeVerified(scope: scope))
            events(.rebuildCompleted(scope: scope))
        }
        try enter(.ready)
        events(.phaseFinished(.rebuild))
    }

    func scopesWithoutCursor() throws(SyncCycleError) -> [String] {
        try mapping(.rebuild) { () throws(SyncError) in
            try context.store.readSyncState { connection in
                try ScopeStore.all(on: connection).filter { $0.cursor == nil }.map(\.scopeID)
            }
        }
    }

    /// The explicit restart of `scopes` (all when nil) in one transaction: attempts and page receipts
    /// discarded, cursor and checksum invalidated, so the rebuild step starts each under a new rebuild ID.
    func restart(_ scopes: [String]?) throws(SyncCycleError) {
        let missing = try mapping(.rebuild) { () throws(SyncError) -> String? in
            try context.store.applySync { connection -> String? in
                let known = try ScopeStore.all(on: connection).map(\.scopeID)
                let named = scopes ?? known
                if let missing = named.first(where: { !known.contains($0) }) { return missing }
                for scope in named {
                    try connection.run("DELETE FROM _synchro_rebuild_page_receipts WHERE scope_id = ?", [.text(scope)])
                    try connection.run("DELETE FROM _synchro_rebuild_attempts WHERE scope_id = ?", [.text(scope)])
                    try ScopeStore.invalidate(scope, on: connection)
                }
                return nil
            }
        }
        if let missing { throw .scopeNotAssigned(scope: missing) }
    }

    /// Discards the scope's attempt (and its page receipts) so that `start` draws a new rebuild ID with a null
    /// cursor (§6.4: only that scope's continuation is discarded).
    private func newAttempt(scope: String, applier: RebuildApplier) throws(SyncCycleError) {
        try mapping(.rebuild) { () throws(SyncError) in
            try context.store.applySync { connection in
                try connection.run("DELETE FROM _synchro_rebuild_page_receipts WHERE scope_id = ?", [.text(scope)])
                try connection.run("DELETE FROM _synchro_rebuild_attempts WHERE scope_id = ?", [.text(scope)])
            }
            _ = try applier.start(scope: scope)
        }
    }

    private static func needsNewAttempt(_ error: SyncCycleError) -> Bool {
        switch error {
        case .sync(_, .http(409, "rebuild_restart_required")), .sync(_, .rebuildChecksumMismatch): true
        default: false
        }
    }
}
