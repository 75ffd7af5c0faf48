import Foundation
import SeedArtifacts
import SynchroProtocol
import SystemKit

/// One run of a pipeline's steps, in its scratch directory `<parent>/.<publish name>.pipeline-<UUID>`, which
/// holds the embedded server's database, `seed.db`, `seed.db.zst`, the installed device copy, the rehearsal's
/// work files and the publication being assembled. It is removed when the run ends, whatever the outcome.
struct PipelineRun {
    let definition: PipelineDefinition
    let probe: PipelineSourceProbe
    let publication: PipelinePublication
    let options: PipelineRunOptions
    let events: @Sendable (PipelineEvent) -> Void
    let scratch: String

    var results: [PipelineStepResult] = []
    var export: SeedExportReport?
    var verification: SeedVerificationReport?
    var pack: PackReport?
    /// The patch against the publication in place, and that publication's `seed.db` digest.
    var patch: (report: PackReport, fromSHA256: String)?
    var rehearsal: RehearsalReport?
    var published: PublishedSeed?
    /// The key the `sign` step read; the publish step signs with it.
    var signingKey: Ed25519PrivateKey?
    /// When the run started, for the provenance's `startedOn`.
    let startedAt = Date()

    init(
        definition: PipelineDefinition, probe: PipelineSourceProbe, publication: PipelinePublication,
        options: PipelineRunOptions, events: @escaping @Sendable (PipelineEvent) -> Void
    ) throws(PipelineError) {
        self.definition = definition
        self.probe = probe
        self.publication = publication
        self.options = options
        self.events = events
        scratch = URL(fileURLWithPath: publication.parent)
            .appendingPathComponent(publication.scratchPrefix + UUID().uuidString.lowercased()).path
    }

    func path(_ name: String) -> String {
        URL(fileURLWithPath: scratch).appendingPathComponent(name).path
    }

    var seedPath: String { path(PipelinePublication.seedName) }
    var packedPath: String { path(PipelinePublication.packedName) }
    var patchPath: String { path(PipelinePublication.patchName) }
    var devicePath: String { path("device/app.db") }

    /// Starts the source, runs every listed step until one fails, and reports.
    mutating func execute(started: ContinuousClock.Instant) throws(PipelineError) -> PipelineReport {
        try PipelineError.io { () throws(SystemError) in
            try FileSystem.makeDirectory(publication.parent, intermediate: true)
            try FileSystem.makeDirectory(scratch)
        }
        defer { FileSystem.removeTree(scratch) }
        let sourceStarted = ContinuousClock.now
        let connection = try PipelineSourceConnection(
            definition, probe: probe, scratch: scratch, wrap: options.wrapWithInterruption, network: options.network)
        defer { connection.stop() }
        events(.sourceReady(kind: definition.source.kind, seconds: PipelineRunner.seconds(since: sourceStarted)))

        for step in PipelineStep.allCases {
            guard definition.runs(step) else {
                results.append(PipelineStepResult(step: step, outcome: .skipped))
                continue
            }
            guard !results.contains(where: { $0.outcome == .failed || $0.outcome == .interrupted }) else {
                results.append(PipelineStepResult(step: step, outcome: .notRun))
                continue
            }
            // The safe point between steps: a stop requested before publish leaves the publish directory as it was.
            CrashPoint.reached("pipeline.\(step.rawValue)")
            guard !options.isInterrupted() else {
                results.append(PipelineStepResult(step: step, outcome: .interrupted))
                continue
            }
            events(.stepStarted(step))
            var result = perform(step, connection: connection)
            if result.failure?.rule == "interrupted" || (result.outcome == .failed && options.isInterrupted()) {
                result = PipelineStepResult(step: step, outcome: .interrupted, seconds: result.seconds)
            }
            events(.stepFinished(result))
            results.append(result)
        }
        let failed = results.contains { $0.outcome == .failed }
        let interrupted = results.contains { $0.outcome == .interrupted }
        return PipelineReport(
            name: definition.name,
            outcome: interrupted ? .interrupted : failed ? .failed : definition.runs(.publish) ? .published : .completed,
            upToDate: false, steps: results, publishDirectory: definition.publishDirectory,
            seed: failed || interrupted ? nil : published, export: export, verification: verification, pack: pack,
            rehearsal: rehearsal, seconds: PipelineRunner.seconds(since: started))
    }

    private mutating func perform(_ step: PipelineStep, connection: PipelineSourceConnection) -> PipelineStepResult {
        let started = ContinuousClock.now
        let outcome: StepOutcome
        switch step {
        case .export: outcome = runExport(connection)
        case .verify: outcome = runVerify()
        case .pack: outcome = runPack()
        case .install: outcome = runInstall()
        case .rehearse: outcome = runRehearse(connection)
        case .sign: outcome = runSign()
        case .publish: outcome = runPublish(connection.exportSource)
        }
        let seconds = PipelineRunner.seconds(since: started)
        switch outcome {
        case .passed(let rows, let bytes, let warnings):
            return PipelineStepResult(
                step: step, outcome: .passed, rows: rows, bytes: bytes, seconds: seconds, warnings: warnings)
        case .failed(let failure, let rows):
            return PipelineStepResult(step: step, outcome: .failed, rows: rows, seconds: seconds, failure: failure)
        }
    }
}

/// What a step's body returns; ``PipelineRun`` adds the step and its time.
enum StepOutcome {
    case passed(rows: Int64?, bytes: Int64?, warnings: [String] = [])
    case failed(PipelineStepFailure, rows: Int64? = nil)

    static func failed(
        rule: String, message: String, findings: [SeedFinding] = [], retriesExhausted: Bool = false
    ) -> StepOutcome {
        .failed(PipelineStepFailure(
            rule: rule, message: message, findings: findings, retriesExhausted: retriesExhausted))
    }
}
