import Foundation
import SeedArtifacts
import SynchroProtocol
import SystemKit

/// How a pipeline run behaves beyond its definition.
public struct PipelineRunOptions: Sendable {
    /// Validate the definition and the source (load the dataset, reach the server) and report whether the
    /// publication is up to date, without writing anything.
    public var dryRun: Bool
    /// Run every step even when the publication is up to date.
    public var force: Bool
    /// Wraps the export source before use (tests inject faults into pages here).
    public var wrapSource: (@Sendable (any SeedExportSource) -> any SeedExportSource)?
    /// How long to wait for another run that holds the publish directory's lock; nil fails at once with
    /// ``PipelineError/locked(directory:holderPID:)``.
    public var lockWait: Duration?
    /// Whether the run was asked to stop (SIGINT, SIGTERM): checked before each step and at every export page; a
    /// stopped run removes its scratch directory and reports ``PipelineReport/Outcome/interrupted``.
    public var isInterrupted: @Sendable () -> Bool
    /// Request time limit, retries and their announcement, for the source and the rehearsal.
    public var network = NetworkSettings()
    /// Free bytes of the file system holding a path (statvfs; tests inject a full disk), for the dry run's
    /// `publish_parent` check.
    public var freeSpace: @Sendable (String) -> Int64? = PipelineDryRun.statvfsFreeSpace

    public init(
        dryRun: Bool = false, force: Bool = false,
        wrapSource: (@Sendable (any SeedExportSource) -> any SeedExportSource)? = nil, lockWait: Duration? = nil,
        isInterrupted: @escaping @Sendable () -> Bool = { false }
    ) {
        self.dryRun = dryRun
        self.force = force
        self.wrapSource = wrapSource
        self.lockWait = lockWait
        self.isInterrupted = isInterrupted
    }

    /// ``wrapSource`` followed by the interruption check at every call.
    var wrapWithInterruption: @Sendable (any SeedExportSource) -> any SeedExportSource {
        { [wrapSource, isInterrupted] source in
            InterruptibleExportSource(base: wrapSource?(source) ?? source, isInterrupted: isInterrupted)
        }
    }
}

/// Runs a pipeline (ARCHITECTURE.md, "Build a seed"; docs/pipelines.md): export → verify → pack → install →
/// rehearse → publish, in a scratch directory beside the publish directory. The publish directory changes only
/// when every earlier step passed, and then atomically; a failed run leaves the previous publication untouched.
public enum PipelineRunner {
    /// Runs `definition`. A failing step is reported in the returned report (outcome
    /// ``PipelineReport/Outcome/failed``); only problems found before the first step throw.
    public static func run(
        _ definition: PipelineDefinition, options: PipelineRunOptions = PipelineRunOptions(),
        events: @escaping @Sendable (PipelineEvent) -> Void = { _ in }
    ) throws(PipelineError) -> PipelineReport {
        let started = ContinuousClock.now
        let publication = PipelinePublication(directory: definition.publishDirectory)
        // A run that writes holds the publish directory's lock from before it looks at the publication until it
        // returns, so a second run waits or is refused, and then finds the first one's publication up to date.
        let lock = options.dryRun ? nil : try publication.lock(wait: options.lockWait, isInterrupted: options.isInterrupted)
        defer { withExtendedLifetime(lock) {} }
        if lock != nil { publication.removeStaleScratch() }
        try publication.checkReplaceable()
        guard !options.isInterrupted() else { throw .interrupted }
        if case .delta(let source) = definition.source {
            if options.dryRun {
                return PipelineDeltaRun.dryRun(
                    definition, source: source, publication: publication, options: options, started: started)
            }
            if !options.force,
               let current = PipelineDeltaRun.upToDate(
                   definition, source: source, publication: publication, options: options) {
                return upToDateReport(definition, seed: current, started: started)
            }
            var run = PipelineDeltaRun(
                definition: definition, source: source, publication: publication, options: options, events: events)
            return try run.execute(started: started)
        }
        if options.dryRun {
            return try dryRun(definition, publication: publication, options: options, started: started)
        }
        let probe = try PipelineSourceProbe.probe(
            definition, wrap: options.wrapWithInterruption, network: options.network)
        guard !options.isInterrupted() else { throw .interrupted }
        let current = options.force ? nil : upToDate(definition, probe: probe, publication: publication)
        if let current { return upToDateReport(definition, seed: current, started: started) }
        var run = try PipelineRun(
            definition: definition, probe: probe, publication: publication, options: options, events: events)
        return try run.execute(started: started)
    }

    /// The report of a run that found its publication up to date: every listed step reused.
    private static func upToDateReport(
        _ definition: PipelineDefinition, seed: PublishedSeed, started: ContinuousClock.Instant
    ) -> PipelineReport {
        let steps = PipelineStep.allCases.map { step in
            PipelineStepResult(step: step, outcome: !definition.runs(step) ? .skipped : .reused)
        }
        return PipelineReport(
            name: definition.name, outcome: .upToDate, upToDate: true,
            steps: steps, publishDirectory: definition.publishDirectory, seed: seed,
            export: nil, verification: nil, pack: nil, rehearsal: nil, seconds: seconds(since: started))
    }

    /// A dry run: the definition's own problems throw as for a run; what a run needs from outside — the source, the
    /// operator and rehearsal credentials, the publish parent — becomes one ``PipelineCheck`` each, and any failed
    /// check makes the outcome ``PipelineReport/Outcome/failed`` (docs/pipelines.md, "Dry run"). Nothing durable is
    /// written.
    static func dryRun(
        _ definition: PipelineDefinition, publication: PipelinePublication, options: PipelineRunOptions,
        started: ContinuousClock.Instant
    ) throws(PipelineError) -> PipelineReport {
        let probe: Result<PipelineSourceProbe, PipelineError>
        do {
            probe = .success(try PipelineSourceProbe.probe(
                definition, wrap: options.wrapWithInterruption, network: options.network))
        } catch {
            // The source's answers are checks; the definition's problems (a scope that is not portable, an invalid
            // dataset) stay errors, as in a run.
            guard case .source = error else { throw error }
            probe = .failure(error)
        }
        var checks = PipelineDryRun.sourceChecks(definition, probe: probe)
        if let rehearsal = PipelineDryRun.rehearsalCheck(definition, network: options.network) {
            checks.append(rehearsal)
        }
        let probed = try? probe.get()
        checks.append(PipelineDryRun.publishParentCheck(
            definition, probe: probed, publication: publication, freeSpace: options.freeSpace))
        let current = options.force ? nil : probed.flatMap { upToDate(definition, probe: $0, publication: publication) }
        return PipelineDryRun.report(definition, checks: checks, upToDate: current, started: started)
    }

    /// `pipeline clean`: removes the scratch directories that dead runs of `definition` left beside its publish
    /// directory (a run killed by SIGKILL or a power loss cannot remove its own), and returns their paths. It holds
    /// the publish directory's lock while it does, so a live run's scratch is never touched: while one runs it fails
    /// with ``PipelineError/locked(directory:holderPID:)``.
    public static func clean(_ definition: PipelineDefinition) throws(PipelineError) -> [String] {
        let publication = PipelinePublication(directory: definition.publishDirectory)
        guard FileSystem.isDirectory(publication.parent) else { return [] }
        let lock = try publication.lock(wait: nil, isInterrupted: { false })
        defer { withExtendedLifetime(lock) {} }
        return publication.removeStaleScratch()
    }

    /// The publication in place when the reuse rule holds (docs/pipelines.md, "Up to date"): it is complete and
    /// intact, was made from the same inputs, and — for a server source — from the same source state.
    static func upToDate(
        _ definition: PipelineDefinition, probe: PipelineSourceProbe, publication: PipelinePublication
    ) -> PublishedSeed? {
        guard definition.runs(.publish) else { return nil }
        var expected = [PipelinePublication.seedName, PipelinePublication.evidenceName]
        if definition.runs(.pack) { expected.append(PipelinePublication.packedName) }
        guard let current = publication.current(expected: expected),
              let pipeline = current.evidence.objectValue?["pipeline"]?.objectValue,
              pipeline["fingerprint"]?.stringValue == probe.inputs.fingerprint
        else { return nil }
        if let state = probe.state {
            guard let recorded = pipeline["source_state"], PipelineSourceState(json: recorded) == state else {
                return nil
            }
        }
        return current.seed
    }

    static func seconds(since start: ContinuousClock.Instant) -> Double {
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }
}
