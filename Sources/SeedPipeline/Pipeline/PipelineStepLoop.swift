import SystemKit

/// The step loop both run paths share (``PipelineRun`` for Synchro sources, ``PipelineDeltaRun`` for delta sources):
/// steps the definition leaves out are skipped, steps after a failure or a stop are not run, the safe point between
/// steps (a crash point, then the stop request) comes before each step, each step is timed and announced, and a
/// failed step becomes `interrupted` when a stop was requested while it ran. A step is given the results before it
/// (publication records their timings in the evidence).
enum PipelineStepLoop {
    static func run(
        _ definition: PipelineDefinition, options: PipelineRunOptions,
        events: @Sendable (PipelineEvent) -> Void,
        perform: (PipelineStep, _ resultsSoFar: [PipelineStepResult]) -> StepOutcome
    ) -> [PipelineStepResult] {
        var results: [PipelineStepResult] = []
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
            let started = ContinuousClock.now
            var result = perform(step, results).result(of: step, seconds: PipelineRunner.seconds(since: started))
            if result.failure?.rule == "interrupted" || (result.outcome == .failed && options.isInterrupted()) {
                result = PipelineStepResult(step: step, outcome: .interrupted, seconds: result.seconds)
            }
            events(.stepFinished(result))
            results.append(result)
        }
        return results
    }

    /// The run's outcome from its steps' results.
    static func outcome(of results: [PipelineStepResult], _ definition: PipelineDefinition) -> PipelineReport.Outcome {
        if results.contains(where: { $0.outcome == .interrupted }) { return .interrupted }
        if results.contains(where: { $0.outcome == .failed }) { return .failed }
        return definition.runs(.publish) ? .published : .completed
    }
}

extension StepOutcome {
    /// The step's result, timed.
    func result(of step: PipelineStep, seconds: Double) -> PipelineStepResult {
        switch self {
        case .passed(let rows, let bytes, let warnings):
            PipelineStepResult(
                step: step, outcome: .passed, rows: rows, bytes: bytes, seconds: seconds, warnings: warnings)
        case .failed(let failure, let rows):
            PipelineStepResult(step: step, outcome: .failed, rows: rows, seconds: seconds, failure: failure)
        }
    }
}
