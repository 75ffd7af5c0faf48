import SQLiteKit

/// `PRAGMA integrity_check` (or `quick_check`) of one file on its own read-only `immutable=1` connection and
/// thread, so that the longest single step of each verification phase overlaps the phase's other checks (and the
/// other phase's waits for the disk) instead of running before them.
///
/// On a thread of its own (``Eventual/init(onThread:)``): the installer checks wait for it from a dispatch worker.
final class IntegrityCheckTask: Sendable {
    private let outcome: Eventual<Result<[String], SQLiteError>>

    /// Starts checking the file at `path`.
    convenience init(path: String, meter: BudgetMeter) {
        self.init(.file(path), meter: meter)
    }

    /// Starts the check `scope` of `database` on a read-only connection of its own.
    init(_ database: StagedCopy, scope: Connection.IntegrityCheckScope = .full, meter: BudgetMeter) {
        outcome = Eventual(onThread: {
            do throws(SQLiteError) {
                let connection = try database.openReadOnly(meter: meter)
                defer { connection.close() }
                try connection.execute("PRAGMA cache_size = -\(Self.cacheKiB)")
                return .success(try connection.integrityCheck(scope))
            } catch {
                return .failure(error)
            }
        })
    }

    /// The check's page cache, in KiB. It reads every page of a b-tree once and then each table's rows again
    /// with a search of every index entry: a cache of the whole file would be needed to save the second reads,
    /// and a large cache costs more to allocate (a heap extension per page in the thread's arena) than the
    /// re-reads from the operating system's cache. Measured on the 100,040-row seed, 55 MB: 16 MiB 150 ms,
    /// 2 MiB 140 ms, 60 MiB 168 ms.
    static let cacheKiB = 2048

    /// Waits for the check; its lines (exactly `["ok"]` for a sound file), or the SQLite failure that stopped it.
    func wait() -> Result<[String], SQLiteError> {
        outcome.wait()
    }

    /// Waits for the check; whether it found nothing.
    var passed: Bool {
        if case .success(let lines) = wait(), lines == ["ok"] { return true }
        return false
    }

    /// Waits for the check and records its finding, if any, under `check` (a failure to run it under `failure`) at
    /// `position` in `collector`'s list: where it would be had the check run first.
    func report(
        into collector: FindingCollector, at position: Int, as check: SeedCheck, failure: SeedCheck
    ) {
        switch wait() {
        case .success(let lines) where lines == ["ok"]:
            break
        case .success(let lines):
            collector.add(SeedFinding(check, message: "PRAGMA integrity_check reported \(lines.count) problems: "
                                          + lines.prefix(5).joined(separator: "; ")), at: position)
        case .failure(let error):
            collector.add(SeedFinding(failure, message: "PRAGMA integrity_check: SQLite failed: \(error.codeName): "
                                          + error.message), at: position)
        }
    }
}
