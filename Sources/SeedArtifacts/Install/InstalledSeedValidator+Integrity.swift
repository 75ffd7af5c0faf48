import SQLiteKit

// MARK: - Item 1

extension InstalledSeedValidator {
    /// Reports item 1, `PRAGMA integrity_check` of the migrated copy, from `task`: the full check when the
    /// validation runs on its own; alongside the publication checks, a `quick_check` that this completes with
    /// `coveredTables` (``coveredByTableChecks(_:_:)``; nil when that did not run or found a problem).
    ///
    /// `integrity_check` is `quick_check` (every b-tree's structure, the file's page accounting, NOT NULL and CHECK
    /// constraints) plus, per table, the checks that read its rows against its indexes (each row's entry in each
    /// index, the entry counts, UNIQUE). The copy passes the latter for a table when either
    /// - the table and all its indexes are the seed's page for page under the same definitions
    ///   (``SeedPageIdentity/tablesProvenWithIndexes(on:)``) and the seed passed its own full check, which read
    ///   the same octets the same way; or
    /// - `PRAGMA integrity_check(table)` on the copy finds nothing.
    ///
    /// So a copy passes here exactly when the device's full check would pass, and three quarters of that check's
    /// cost — the index searches of the large tables, which the migration leaves as they are — are not spent twice.
    /// Anything else — a failed `quick_check`, a table check, the seed's check, a SQLite failure — runs the full
    /// check on the copy and reports its lines, so a rejection always names what the device's check names.
    func reportIntegrity(_ task: IntegrityCheckTask, coveredTables: Set<String>?, at position: Int) {
        if let seed, let proven = coveredTables, task.passed,
           proven.isEmpty || seed.shared.seedPassedIntegrityCheck()
        {
            return
        }
        let full = seed == nil ? task : IntegrityCheckTask(copy, meter: collector.meter)
        full.report(into: collector, at: position, as: .installerIntegrityCheck, failure: .installerSQLiteError)
    }

    /// Runs `PRAGMA integrity_check(table)` on every table of the copy that is not proven page for page with its
    /// indexes; the proven tables (which the seed's check covers) when every other one passed, nil otherwise.
    func coveredByTableChecks(_ pages: SeedPageIdentity, _ connection: Connection) -> Set<String>? {
        guard let seed else { return nil }
        do {
            let proven = try withSeedAttached(seed.path, connection) {
                pages.tablesProvenWithIndexes(on: connection)
            }
            let tables = try connection.query("SELECT name FROM main.sqlite_schema WHERE type = 'table'") {
                try $0.text(at: 0)
            }
            for table in tables where !proven.contains(table) {
                guard try connection.integrityCheck(.table(table)) == ["ok"] else { return nil }
            }
            return proven
        } catch {
            return nil
        }
    }
}
