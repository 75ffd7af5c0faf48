import Foundation
import SeedArtifacts
import SynchroProtocol

/// How a pipeline run behaves beyond its definition.
public struct PipelineRunOptions: Sendable {
    /// Validate the definition and the source (load the dataset, reach the server) and report whether the
    /// publication is up to date, without writing anything.
    public var dryRun: Bool
    /// Run every step even when the publication is up to date.
    public var force: Bool
    /// Wraps the export source before use (tests inject faults into pages here).
    public var wrapSource: (@Sendable (any SeedExportSource) -> any SeedExportSource)?

    public init(
        dryRun: Bool = false, force: Bool = false,
        wrapSource: (@Sendable (any SeedExportSource) -> any SeedExportSource)? = nil
    ) {
        self.dryRun = dryRun
        self.force = force
        self.wrapSource = wrapSource
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
        try publication.checkReplaceable()
        let probe = try PipelineSourceProbe.probe(definition, wrap: options.wrapSource)
        let current = options.force ? nil : upToDate(definition, probe: probe, publication: publication)
        if options.dryRun || current != nil {
            let steps = PipelineStep.allCases.map { step in
                PipelineStepResult(
                    step: step, outcome: !definition.runs(step) ? .skipped : current != nil ? .reused : .planned)
            }
            return PipelineReport(
                name: definition.name, outcome: options.dryRun ? .validated : .upToDate, upToDate: current != nil,
                steps: steps, publishDirectory: definition.publishDirectory, seed: current,
                export: nil, verification: nil, pack: nil, rehearsal: nil, seconds: seconds(since: started))
        }
        var run = try PipelineRun(
            definition: definition, probe: probe, publication: publication, options: options, events: events)
        return try run.execute(started: started)
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
