import SQLiteKit

/// Collects findings in check order, lists at most a fixed number per check (a seed with every row altered would
/// otherwise print one finding per row) and remembers which checks were evaluated. A reference type so that the
/// steps of a verifier share one collector; each verification thread has its own.
final class FindingCollector {
    private(set) var findings: [SeedFinding] = []
    private var counts: [SeedCheck: Int] = [:]
    private var evaluated: Set<SeedCheck> = []
    /// Findings listed per check.
    let limit: Int
    /// The verification's budget, which every connection the checks open counts against.
    let meter: BudgetMeter

    init(limit: Int, meter: BudgetMeter = BudgetMeter(VerificationBudget())) {
        self.limit = max(limit, 1)
        self.meter = meter
    }

    /// Records that `checks` ran, whether or not they found anything.
    func evaluated(_ checks: SeedCheck...) {
        evaluated(checks)
    }

    func evaluated(_ checks: [SeedCheck]) {
        evaluated.formUnion(checks)
    }

    func add(_ finding: SeedFinding) {
        evaluated.insert(finding.check)
        let count = counts[finding.check, default: 0] + 1
        counts[finding.check] = count
        if count <= limit { findings.append(finding) }
    }

    /// Records `finding` at `position` in the list (a count of findings listed earlier, see ``listed``): where a
    /// check that ran concurrently with later ones would have put it had it run in order.
    func add(_ finding: SeedFinding, at position: Int) {
        evaluated.insert(finding.check)
        let count = counts[finding.check, default: 0] + 1
        counts[finding.check] = count
        if count <= limit { findings.insert(finding, at: min(max(position, 0), findings.count)) }
    }

    /// Records `other`'s findings after this one's, in `other`'s order, as if they had been added here: the ones
    /// `other` listed are added (this collector's limit applies), the ones it only counted are counted. `other`
    /// must have the same limit. A finding of `table` with a row has `offset` added to its row (`other` counted
    /// ordinals from its own first row).
    func append(_ other: FindingCollector, shiftingRowsOf table: String, by offset: Int64) {
        evaluated.formUnion(other.evaluated)
        var listedByOther: [SeedCheck: Int] = [:]
        for finding in other.findings {
            listedByOther[finding.check, default: 0] += 1
            guard finding.table == table, let row = finding.row else {
                add(finding)
                continue
            }
            add(SeedFinding(finding.check, scope: finding.scope, table: finding.table, row: row + offset,
                            message: finding.message))
        }
        for (check, count) in other.counts where count > listedByOther[check, default: 0] {
            counts[check, default: 0] += count - listedByOther[check, default: 0]
        }
    }

    /// Number of findings listed so far.
    var listed: Int { findings.count }

    func add(
        _ check: SeedCheck, scope: String? = nil, table: String? = nil, row: Int64? = nil, _ message: String
    ) {
        add(SeedFinding(check, scope: scope, table: table, row: row, message: message))
    }

    /// Whether any finding of `check` was recorded.
    func has(_ check: SeedCheck) -> Bool {
        counts[check, default: 0] > 0
    }

    /// Number of findings of `check` recorded so far, listed or not.
    func count(_ check: SeedCheck) -> Int {
        counts[check, default: 0]
    }

    /// Number of findings recorded so far, listed or not.
    var total: Int { counts.values.reduce(0, +) }

    /// Runs `body`; an SQLite failure inside it becomes one `check` finding naming `step` (a corrupt page makes
    /// reads fail: the remaining steps still run).
    func guarding(_ step: String, as check: SeedCheck, _ body: () throws -> Void) {
        do {
            try body()
        } catch let error as SQLiteError {
            add(check, "\(step): SQLite failed: \(error.codeName): \(error.message)")
        } catch {
            add(check, "\(step): \(error)")
        }
    }

    /// The listed findings followed by one summary finding per check that had more than the limit.
    func finish() -> (findings: [SeedFinding], evaluated: Set<SeedCheck>) {
        var result = findings
        for check in SeedCheck.allCases {
            let count = counts[check, default: 0]
            if count > limit {
                let message = "\(count - limit) more findings of this check are not listed"
                result.append(SeedFinding(check, message: message))
            }
        }
        return (result, evaluated)
    }
}
