import Foundation
import SeedArtifacts
import SeedPipeline
import Synchronization
import SynchroClient
import SynchroProtocol
import SystemKit

/// `seedkit pipeline run FILE`: builds a seed as the pipeline file says — export, verify, pack, install,
/// rehearse, publish — and reports each step (docs/pipelines.md). Exit status 0 when every step passed (or the
/// publication is up to date, or a dry run found the file and source valid), 1 when a check failed, 2 for an
/// invalid pipeline file or usage, 5 when another run holds the publish directory (`locked`), 130 when SIGINT or
/// SIGTERM stopped it (`interrupted; nothing published`). `seedkit pipeline clean FILE` removes the scratch
/// directories of dead runs.
enum PipelineCommand {
    static let runSpec = CommandSpec(
        "pipeline run", "export, verify, pack, install, rehearse and publish a seed",
        positionals: [PositionalSpec(placeholder: "FILE", help: "the pipeline file (docs/pipelines.md)")],
        options: [
            .flag("dry-run", "check the file and the source, change nothing"),
            .force("publish even when the publication is up to date"),
            .value("wait", "SECONDS", .integer(0...86_400),
                   "when another run holds the publish directory, wait this long instead of failing with locked"),
            overrides,
            .json("JSON Lines events on standard output"),
        ] + NetworkOptions.specs)
    static let validateSpec = CommandSpec(
        "pipeline validate", "check a pipeline file without running anything",
        positionals: [PositionalSpec(placeholder: "FILE", help: "the pipeline file (docs/pipelines.md)")],
        options: [overrides, .json("one JSON object: the file's name, source kind, steps and publish directory")])
    /// `--set KEY.PATH=VALUE`, which `pipeline run` and `pipeline validate` take alike.
    static let overrides = OptionSpec.value(
        "set", "KEY.PATH=VALUE", .text,
        "override one member of the file (after SEEDKIT_PIPELINE_… variables); unknown members are refused",
        repeatable: true)
    static let cleanSpec = CommandSpec(
        "pipeline clean", "remove the scratch directories of killed runs",
        positionals: [PositionalSpec(placeholder: "FILE", help: "the pipeline file whose publish directory to clean")],
        options: [.json("JSON Lines events on standard output")])

    static func run(_ words: [String]) throws(Arguments.UsageError) -> ExitStatus {
        switch words.first {
        case "run": return try runPipeline(Array(words.dropFirst()))
        case "validate": return try validate(Array(words.dropFirst()))
        case "clean": return try clean(Array(words.dropFirst()))
        default:
            throw Arguments.UsageError(
                message: "pipeline needs a subcommand: pipeline run FILE, pipeline validate FILE or "
                    + "pipeline clean FILE")
        }
    }

    private static func runPipeline(_ words: [String]) throws(Arguments.UsageError) -> ExitStatus {
        let arguments = try Arguments(words, spec: runSpec)
        try arguments.requirePositionals(atMost: 1, atLeast: 1)
        let wait = arguments.integer("wait").map { Duration.seconds($0) }
        let flags = arguments.flags
        let network = NetworkOptions(arguments)
        let output = PipelineOutput(json: flags.contains("json"), console: arguments.console("pipeline"))
        guard let definition = load(arguments.positionals[0], sets: arguments.allValues["set"], output: output) else {
            return .invalidInput
        }
        output.begin(definition, dryRun: flags.contains("dry-run"))
        // From here SIGINT and SIGTERM stop the run at its next safe point instead of killing it mid-write.
        Interruption.install()
        var options = PipelineRunOptions(
            dryRun: flags.contains("dry-run"), force: flags.contains("force"), lockWait: wait,
            isInterrupted: { Interruption.requested })
        options.network = network.settings(
            command: "pipeline", json: output.json, console: output.console, jsonLines: true)
        do {
            let report = try PipelineRunner.run(definition, options: options, events: output.handler)
            output.finish(report)
            if report.outcome == .interrupted {
                output.error(rule: "interrupted", member: nil, message: PipelineError.interrupted.description,
                             status: .interrupted)
                return .interrupted
            }
            if let failed = report.checks.first(where: { !$0.passed }) {
                // A dry run's failed check: the closing error names the first one's rule; each is listed above.
                let count = report.checks.filter { !$0.passed }.count
                output.error(
                    rule: failed.rule ?? "check_failed", member: failed.name,
                    message: "pipeline \(definition.name): the dry run found \(count) problem\(count == 1 ? "" : "s") "
                        + "a run would fail on: \(failed.message)", status: .checkFailed)
                return .checkFailed
            }
            if let status = output.stepFailure(report) { return status }
            return report.passed ? .success : .checkFailed
        } catch {
            let status: ExitStatus = switch error {
            case .locked: .locked
            case .interrupted: .interrupted
            case .source(.transport(_, _, _, true)): .retriesExhausted
            default: error.isInvalidInput ? .invalidInput : .checkFailed
            }
            var message = "pipeline \(definition.name): \(error)"
            if case .source(.refused(_, let code, _)) = error, code == 401 || code == 403,
               case .server(let server) = definition.source
            {
                message += "; the server refused the operator token from $\(server.operatorToken.variable): fix it there"
            }
            output.error(rule: error.rule, member: nil, message: message, status: status)
            return status
        }
    }

    /// `pipeline clean FILE`: removes the scratch directories of dead runs beside the publish directory.
    private static func clean(_ words: [String]) throws(Arguments.UsageError) -> ExitStatus {
        let arguments = try Arguments(words, spec: cleanSpec)
        try arguments.requirePositionals(atMost: 1, atLeast: 1)
        let console = arguments.console("pipeline")
        let output = PipelineOutput(json: arguments.flags.contains("json"), console: console)
        guard let definition = load(arguments.positionals[0], output: output) else { return .invalidInput }
        do {
            let removed = try PipelineRunner.clean(definition)
            if output.json {
                output.event([
                    JSONMember("event", .string("cleaned")),
                    JSONMember("removed", .array(removed.map(JSONValue.string))),
                ])
            } else {
                for path in removed { console.detail("removed \(path)") }
                console.info("removed \(removed.count) stale scratch director\(removed.count == 1 ? "y" : "ies") of "
                    + "\(definition.publishDirectory)\n")
            }
            return .success
        } catch {
            let status: ExitStatus = if case .locked = error { .locked } else { .checkFailed }
            output.error(rule: error.rule, member: nil, message: "pipeline \(definition.name): \(error)", status: status)
            return status
        }
    }

    /// `pipeline validate FILE`: the file (with its overrides) checked as a run would load it, without reaching the
    /// source or writing anything.
    private static func validate(_ words: [String]) throws(Arguments.UsageError) -> ExitStatus {
        let arguments = try Arguments(words, spec: validateSpec)
        try arguments.requirePositionals(atMost: 1, atLeast: 1)
        let console = arguments.console("pipeline")
        let output = PipelineOutput(json: arguments.flags.contains("json"), console: console)
        guard let definition = load(arguments.positionals[0], sets: arguments.allValues["set"], output: output) else {
            return .invalidInput
        }
        let steps = definition.steps.map(\.rawValue)
        if output.json {
            output.event([
                JSONMember("event", .string("valid")), JSONMember("pipeline", .string(definition.name)),
                JSONMember("source", .string(definition.source.kind)),
                JSONMember("steps", .array(steps.map(JSONValue.string))),
                JSONMember("publish_directory", .string(definition.publishDirectory)),
            ])
        } else {
            console.info("pipeline \(definition.name) is valid: \(definition.source.kind) source, steps "
                + steps.joined(separator: ", ") + ", publish directory \(definition.publishDirectory)\n")
        }
        return .success
    }

    /// The definition at `file` with the overrides of `SEEDKIT_PIPELINE_…` variables and then of `--set` (`sets`);
    /// nil after reporting why it is invalid.
    private static func load(_ file: String, sets: [String]? = nil, output: PipelineOutput) -> PipelineDefinition? {
        do {
            var overrides = try PipelineFormat.overrides(environment: ProcessInfo.processInfo.environment)
            for assignment in sets ?? [] { overrides.append(try PipelineOverride(parsing: assignment)) }
            return try PipelineDefinition.load(file: file, overrides: overrides)
        } catch {
            output.error(rule: error.rule, member: error.member, message: "invalid pipeline file: \(error)",
                         status: .invalidInput)
            return nil
        }
    }
}

/// What `pipeline run` prints. With `--json`: one canonical JSON line per step start and finish and a final
/// summary line on standard output. Otherwise: a progress line on standard error while it is a terminal, the
/// summary table, the publication and a closing line on standard output (none of it when quiet). `--verbose`
/// adds, on standard error, the source and publish directory, a line per step as it starts and finishes, and the
/// verification counts. Failures go to standard error.
private final class PipelineOutput: Sendable {
    let json: Bool
    let console: Console
    private let progress: PipelineProgressLine?

    init(json: Bool, console: Console) {
        self.json = json
        self.console = console
        progress = !json && console.drawsProgress ? PipelineProgressLine() : nil
    }

    func begin(_ definition: PipelineDefinition, dryRun: Bool) {
        let source = switch definition.source {
        case .embedded(let dataset, let rows): "the embedded reference server on \(dataset)"
            + (rows.map { " (\($0) rows)" } ?? "")
        case .server(let server): "\(Console.displayURL(server.url)), operator credential from "
            + "$\(server.operatorToken.variable)"
        case .postgresql: "PostgreSQL (upstream's export functions)"
        case .delta(let delta): "the delta-sync API \(Console.displayURL(delta.definition.baseURL)) described by "
            + (delta.bearer.map { "its definition, bearer credential from \($0.description)" } ?? "its definition")
        }
        console.detail("\(definition.name): source \(source); publish directory \(definition.publishDirectory)")
        console.detail("steps: " + definition.steps.map(\.rawValue).joined(separator: ", "))
        guard !dryRun else { return }
        progress?.plan(definition.steps)
        let preparing = switch definition.source.kind {
        case "embedded": "starting the embedded reference server"
        case "delta": "asking the delta API whether the publication is current"
        default: "asking the server for its export manifest"
        }
        progress?.preparing(preparing)
    }

    var handler: @Sendable (PipelineEvent) -> Void {
        { [self] event in
            switch event {
            case .stepStarted(let step): console.detail("\(step.rawValue) started")
            case .stepFinished(let result):
                console.detail(PipelineText.stepLine(result))
                // Whatever the verbosity: a foreign file was kept and someone should look at it.
                for warning in result.warnings { Terminal.err(Terminal.printable("seedkit: warning: \(warning)\n")) }
            case .sourceReady(let kind, let seconds):
                console.detail("\(kind) source ready in \(PipelineText.seconds(seconds))")
            case .progress: break
            }
            if json {
                if let object = event.json { Self.line(object) }
                return
            }
            progress?.show(event)
        }
    }

    func finish(_ report: PipelineReport) {
        progress?.clear()
        if let verification = report.verification {
            console.detail("verification: \(verification.checks) checks, "
                + "\(PipelineText.count(Int64(verification.rows))) rows re-digested, "
                + "\(verification.findings.count) findings")
        }
        if json {
            Self.line(report.summaryJSON)
        } else {
            console.info(PipelineText.report(report))
            console.info(PipelineText.result(report))
        }
        if let failed = report.failedStep, let failure = failed.failure {
            for finding in failure.findings.prefix(20) { Terminal.err("  \(finding)\n") }
            Terminal.err("the publish directory \(report.publishDirectory) was not changed\n")
        }
    }

    /// The closing error of a run whose step failed (exit 1, or 4 when the step's requests outlasted `--retries`),
    /// through ``error(rule:member:message:status:)`` like every other failure; nil when no step failed.
    func stepFailure(_ report: PipelineReport) -> ExitStatus? {
        guard let failed = report.failedStep, let failure = failed.failure else { return nil }
        let status: ExitStatus = failure.retriesExhausted ? .retriesExhausted : .checkFailed
        error(rule: failure.rule, member: nil,
              message: "pipeline \(report.name) failed at \(failed.step.rawValue): \(failure.message)", status: status)
        return status
    }

    /// The closing error: a JSON `error` event with the rule, message and exit status, and the message (with the
    /// rule) on standard error.
    func error(rule: String, member: String?, message: String, status: ExitStatus) {
        progress?.clear()
        if json {
            Self.line(.object(JSONObject([
                JSONMember("event", .string("error")), JSONMember("rule", .string(rule)),
                JSONMember("member", member.map(JSONValue.string) ?? .null), JSONMember("message", .string(message)),
                JSONMember("exit_status", .number(JSONNumber(Int64(status.rawValue)))),
            ])))
        }
        Terminal.err("seedkit: \(message)\(message.contains("(\(rule))") ? "" : " (\(rule))")\n")
    }

    /// One JSON line of `members`.
    func event(_ members: [JSONMember]) {
        Self.line(.object(JSONObject(members)))
    }

    private static func line(_ value: JSONValue) {
        // Events hold names, counts and rules only; encoding cannot fail, and a failure would drop one line.
        guard let bytes = try? CanonicalJSON.encode(value) else { return }
        Terminal.out(bytes: bytes + [0x0A])
    }
}

/// The progress line on standard error (only ever created when it is a terminal): the step, its count against
/// the expected total, the rate, the time left, and the time the step has taken, redrawn twice a second so a
/// step without counts (verify, install, a rebuild comparison) still shows it is working.
private final class PipelineProgressLine: Sendable {
    private struct State {
        /// What is running: a step's label, the source being prepared, or empty between steps.
        var label = ""
        var step: PipelineStep?
        var started = ContinuousClock.now
        var progress: PipelineProgress?
        var lastDraw = ContinuousClock.now - .seconds(1)
    }

    private let state = Mutex(State())
    /// The steps the pipeline runs, which the label numbers (`[2/6] verify`).
    private let planned = Mutex(PipelineStep.allCases)
    /// Set once the line is cleared for good; nothing is drawn after that.
    private let finished = Mutex(false)

    init() {
        Thread.detachNewThread { [self] in
            while tick() { Thread.sleep(forTimeInterval: 0.5) }
        }
    }

    func plan(_ steps: [PipelineStep]) {
        planned.withLock { $0 = steps }
    }

    func preparing(_ what: String) {
        update { $0 = State(label: what) }
    }

    func show(_ event: PipelineEvent) {
        switch event {
        case .sourceReady:
            update { $0 = State() }
        case .stepStarted(let step):
            let steps = planned.withLock { $0 }
            update { $0 = State(label: Self.label(step, of: steps), step: step) }
        case .progress(let step, let progress):
            update(throttled: true) { state in
                guard state.step == step else { return }
                state.progress = progress
            }
        case .stepFinished:
            update { $0 = State() }
        }
    }

    /// Clears the line and stops redrawing.
    func clear() {
        state.withLock { _ in
            finished.withLock { $0 = true }
            Terminal.progress("\r\u{1B}[K")
        }
    }

    /// Redraws from the ticker; false once the display is finished.
    private func tick() -> Bool {
        state.withLock { state in
            guard !finished.withLock({ $0 }) else { return false }
            Self.draw(&state)
            return true
        }
    }

    private func update(throttled: Bool = false, _ change: (inout State) -> Void) {
        state.withLock { state in
            guard !finished.withLock({ $0 }) else { return }
            change(&state)
            guard !throttled || ContinuousClock.now - state.lastDraw >= .milliseconds(100) else { return }
            Self.draw(&state)
        }
    }

    private static func draw(_ state: inout State) {
        let label = state.label
        let now = ContinuousClock.now
        state.lastDraw = now
        guard !label.isEmpty else {
            Terminal.progress("\r\u{1B}[K")
            return
        }
        let elapsed = PipelineText.seconds(between: state.started, and: now)
        var line = label
        if let progress = state.progress { line += "  " + text(progress, elapsed: elapsed) }
        Terminal.progress("\r\u{1B}[K\(line)  \(PipelineText.seconds(elapsed))")
    }

    private static func label(_ step: PipelineStep, of steps: [PipelineStep]) -> String {
        let index = (steps.firstIndex(of: step) ?? 0) + 1
        return "[\(index)/\(steps.count)] \(step.rawValue)"
    }

    /// `45,000/100,040 rows 44%  12,345 rows/s  ~4.45 s left`, or `12.1/33.2 MB 36%  …` for bytes.
    private static func text(_ progress: PipelineProgress, elapsed: Double) -> String {
        let rows = progress.unit == .rows
        let amount = { (value: Int64) in rows ? PipelineText.count(value) : PipelineText.bytes(value) }
        let rate = elapsed > 0 ? Double(progress.done) / elapsed : 0
        guard let total = progress.total, total > 0 else {
            return amount(progress.done) + (rows ? " rows" : "")
        }
        let percent = min(100, progress.done * 100 / total)
        var line = "\(amount(progress.done))/\(amount(total))\(rows ? " rows" : "")  \(percent)%"
        if rate > 0, progress.done < total {
            line += "  \(amount(Int64(rate)))\(rows ? " rows" : "")/s"
            line += "  ~\(PipelineText.seconds(Double(total - progress.done) / rate)) left"
        }
        return line
    }
}
