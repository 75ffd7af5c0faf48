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
    var patch: PipelinePatch?
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

        results = PipelineStepLoop.run(definition, options: options, events: events) { step, soFar in
            results = soFar
            return perform(step, connection: connection)
        }
        let outcome = PipelineStepLoop.outcome(of: results, definition)
        let failed = outcome == .failed || outcome == .interrupted
        return PipelineReport(
            name: definition.name,
            outcome: outcome, upToDate: false, steps: results, publishDirectory: definition.publishDirectory,
            seed: failed ? nil : published, export: export, verification: verification, pack: pack,
            rehearsal: rehearsal, seconds: PipelineRunner.seconds(since: started))
    }

    private mutating func perform(_ step: PipelineStep, connection: PipelineSourceConnection) -> StepOutcome {
        switch step {
        case .export: runExport(connection)
        case .verify: runVerify()
        case .pack: runPack()
        case .install: runInstall()
        case .rehearse: runRehearse(connection)
        case .sign: runSign()
        case .publish: runPublish(connection.exportSource)
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
