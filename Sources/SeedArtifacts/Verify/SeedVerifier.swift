import Dispatch
import Foundation
import SQLiteKit
import Synchronization
import SystemKit

/// Verifies a seed database offline (`spec/seed-format.md`): first every publication check of the exporter (§6)
/// on the file itself, opened read-only and `immutable=1`; then the device installer's validation (§7.1) on a
/// copy migrated by the client store. That copy is thrown away, so it is an in-memory database (the backup API
/// copies the seed's pages into it; no file is written, journaled, synced or deleted), or, for a seed too large for
/// memory, a copy-on-write overlay of the seed in the temporary directory that holds only the blocks the migration
/// writes (``CopyOnWriteFile``). Every failure is a typed ``SeedFinding``; only input that is not a seed at all
/// throws.
///
/// The two phases read different databases, so they run concurrently. Rows are digested once: when the migrated
/// copy holds exactly the seed's rows, row versions and edges (unchanged pages, or rows compared side by side),
/// the installer checks reuse the digests the publication checks recomputed; otherwise they audit the copy on
/// their own.
/// docs/seed-verification.md lists every check.
public enum SeedVerifier {
    /// Verifies the seed at `path` (`.db`, or a zstd-packed `.db.zst`, recognized by its frame magic and unpacked
    /// to a temporary file first).
    ///
    /// - Throws: ``SeedInputError`` when the file is missing, not a regular file, unreadable, not SQLite,
    ///   truncated, a zstd frame that does not unpack, or when a temporary copy cannot be made.
    public static func verify(
        path: String, options: SeedVerificationOptions = SeedVerificationOptions()
    ) throws(SeedInputError) -> SeedVerificationReport {
        let source = try SeedSource(path: path, temporaryDirectory: options.temporaryDirectory,
                                    maximumUnpackedBytes: options.maximumUnpackedBytes)
        defer { source.discard() }
        guard options.includeInstallerChecks else {
            return SeedCheckRun.run(seed: source.databasePath, staged: nil, options: options).report
        }
        let directory = options.temporaryDirectory ?? NSTemporaryDirectory()
        let uuid = UUID().uuidString.lowercased()
        let fallback = SeedStaging.stagedPath(
            nextTo: URL(fileURLWithPath: directory).appendingPathComponent("seedkit-verify.db").path, uuid: uuid)
        defer { try? SeedStaging.removeFamily(fallback) }
        // The migrated copy is thrown away, so it lives in memory: no file to write, journal, sync and delete.
        let target = SeedStaging.Target.memory(name: "/seedkit-verify-\(uuid)", fallback: fallback)
        let run = SeedCheckRun.run(seed: source.databasePath, staged: target, options: options)
        if let failure = run.stagingFailure {
            throw .temporaryFile(
                reason: SystemError(operation: failure.operation, path: failure.path, code: failure.errno).description)
        }
        return run.report
    }

    /// The exporter's self-verification (§6) of the file at `path`, expecting `snapshot_complete` to be
    /// `expectedSnapshotComplete` (0 for the staged file, 1 after finalization): the entry point the exporter
    /// calls twice before it publishes.
    public static func verifyPublication(
        path: String, expectedSnapshotComplete: Int
    ) throws(SeedInputError) -> SeedVerificationReport {
        try verify(path: path, options: .publication(snapshotComplete: expectedSnapshotComplete))
    }
}

/// The publication checks and, when a staged path is given, the installer's procedure and validation, run
/// concurrently and merged into one report (publication findings first).
enum SeedCheckRun {
    struct Outcome {
        let report: SeedVerificationReport
        /// Set when the staged copy could not be written (the installer checks then did not run).
        let stagingFailure: SeedStaging.IOFailure?
    }

    private struct InstallerOutcome: Sendable {
        var findings: [SeedFinding] = []
        var evaluated: Set<SeedCheck> = []
        var failure: SeedStaging.IOFailure?
    }

    ///
    /// The schema gate (``SeedSchemaGate``) runs first: a seed carrying code of its own is not migrated. Every
    /// connection counts against one ``BudgetMeter``; when it runs out, the findings of the statements it stopped
    /// give way to one `budget_exceeded` finding.
    static func run(seed: String, staged: SeedStaging.Target?, options: SeedVerificationOptions) -> Outcome {
        let meter = BudgetMeter(options.budget)
        let gate = FindingCollector(limit: options.maximumFindingsPerCheck, meter: meter)
        let admitted = SeedSchemaGate.admits(seed: seed, collector: gate)
        let installer = SendableBox<InstallerOutcome>()
        let shared = PublicationHandoff()
        let group = DispatchGroup()
        if let staged, admitted {
            DispatchQueue.global(qos: .userInitiated).async(group: group) {
                let collector = FindingCollector(limit: options.maximumFindingsPerCheck, meter: meter)
                var outcome = InstallerOutcome()
                do throws(SeedStaging.IOFailure) {
                    try SeedStaging.stage(seed: seed, target: staged, collector: collector, shared: shared)
                } catch {
                    outcome.failure = error
                }
                (outcome.findings, outcome.evaluated) = collector.finish()
                installer.set(outcome)
            }
        }
        var publication = PublicationVerifier(path: seed, options: options, shared: shared, meter: meter)
        publication.run()
        group.wait()
        let (gateFindings, gateEvaluated) = gate.finish()
        let (findings, evaluated) = publication.collector.finish()
        let other = installer.value ?? InstallerOutcome()
        var all = gateFindings + findings + other.findings
        var checks = gateEvaluated.union(evaluated).union(other.evaluated)
        if let exhausted = meter.finding() {
            all = [exhausted] + all.filter { !Self.stoppedByBudget($0) }
            checks.insert(.budgetExceeded)
        }
        let report = SeedVerificationReport(findings: all, checks: checks.count, rows: publication.rows)
        return Outcome(report: report, stagingFailure: other.failure)
    }

    /// A finding that only says a statement was stopped (`SQLITE_INTERRUPT`): the budget's finding replaces it.
    private static func stoppedByBudget(_ finding: SeedFinding) -> Bool {
        finding.message.contains(SQLiteResultCode.interrupt.name) || finding.message.contains("interrupted")
    }
}

/// What the publication checks hand to the installer checks running alongside: their row audit of the seed and
/// their `PRAGMA integrity_check` of it. When the migrated copy provably holds exactly the seed's rows, row versions
/// and edges, the digests the publication checks recomputed from the seed are the ones the copy would yield, so the
/// installer checks compare them instead of digesting every row a second time; and when a table and its indexes are
/// the seed's page for page, the seed's passed check covers them in the copy
/// (``InstalledSeedValidator``'s item 1).
final class PublicationHandoff: Sendable {
    private let audit = Eventual<RowAuditResult?>()
    private let integrity = Eventual<IntegrityCheckTask?>()

    /// Called exactly once by the publication checks, with nil when their audit did not run.
    func publish(_ audit: RowAuditResult?) {
        self.audit.provide(audit)
    }

    /// Waits for ``publish(_:)``.
    func wait() -> RowAuditResult? {
        audit.wait()
    }

    /// Called exactly once by the publication checks, with their running check of the whole seed, or nil when it
    /// does not run.
    func publish(integrityCheck task: IntegrityCheckTask?) {
        integrity.provide(task)
    }

    /// Waits for the seed's `PRAGMA integrity_check`; whether it ran and found nothing.
    func seedPassedIntegrityCheck() -> Bool {
        integrity.wait()?.passed ?? false
    }
}

/// A value handed from a worker thread to the thread that waits for it.
final class SendableBox<Value: Sendable>: Sendable {
    private let storage = Mutex<Value?>(nil)

    func set(_ value: Value) {
        storage.withLock { $0 = value }
    }

    var value: Value? {
        storage.withLock { $0 }
    }
}
