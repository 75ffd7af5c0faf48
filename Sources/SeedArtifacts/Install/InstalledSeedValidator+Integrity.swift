import SQLiteKit

// MARK: - Item 1

extension InstalledSeedValidator {
    /// Reports item 1, `PRAGMA integrity_check` of the migrated copy, from `task`: the full check when the
    /// validation runs on its own; alongside the publication checks, a `quick_check` that this completes.
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
    func reportIntegrity(
        _ task: IntegrityCheckTask, pages: SeedPageIdentity?, at position: Int, _ connection: Connection
    ) {
        if let pages, task.passed, passesTableChecks(pages, connection) { return }
        let full = seed == nil ? task : IntegrityCheckTask(copy)
        full.report(into: collector, at: position, as: .installerIntegrityCheck, failure: .installerSQLiteError)
    }

    /// Whether every table of the copy passes the checks `quick_check` leaves out, as ``reportIntegrity`` describes.
    private func passesTableChecks(_ pages: SeedPageIdentity, _ connection: Connection) -> Bool {
        guard let seed else { return false }
        do {
            let proven = try withSeedAttached(seed.path, connection) {
                pages.tablesProvenWithIndexes(on: connection)
            }
            let tables = try connection.query("SELECT name FROM main.sqlite_schema WHERE type = 'table'") {
                try $0.text(at: 0)
            }
            for table in tables where !proven.contains(table) {
                guard try connection.integrityCheck(.table(table)) == ["ok"] else { return false }
            }
            return proven.isEmpty || seed.shared.seedPassedIntegrityCheck()
        } catch {
            return false
        }
    }
}
