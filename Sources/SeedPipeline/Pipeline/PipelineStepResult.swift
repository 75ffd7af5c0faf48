import SeedArtifacts
import SynchroProtocol

/// What one step did.
public struct PipelineStepResult: Sendable {
    public enum Outcome: String, Sendable {
        /// The step ran and everything it checks holds.
        case passed
        /// The step ran and a check failed, or it could not complete.
        case failed
        /// The pipeline does not list the step.
        case skipped
        /// An earlier step failed.
        case notRun = "not_run"
        /// The publication is up to date: the step's verified output was reused.
        case reused
        /// A dry run: the step would run.
        case planned
        /// SIGINT or SIGTERM stopped the run before or during the step; nothing after it ran.
        case interrupted
    }

    public let step: PipelineStep
    public let outcome: Outcome
    /// Rows the step handled (exported, verified, pulled by the rehearsal), when it counts rows.
    public let rows: Int64?
    /// Bytes the step produced (the seed, the frame, the installed database, the publication), when it writes.
    public let bytes: Int64?
    public let seconds: Double
    /// Why the step failed.
    public let failure: PipelineStepFailure?
    /// What a passed step noticed and left alone (publish: a foreign entry it kept), one line each, naming files,
    /// never their contents.
    public let warnings: [String]

    init(
        step: PipelineStep, outcome: Outcome, rows: Int64? = nil, bytes: Int64? = nil, seconds: Double = 0,
        failure: PipelineStepFailure? = nil, warnings: [String] = []
    ) {
        self.step = step
        self.outcome = outcome
        self.rows = rows
        self.bytes = bytes
        self.seconds = seconds
        self.failure = failure
        self.warnings = warnings
    }

    var jsonMembers: [JSONMember] {
        var members = [
            JSONMember("step", .string(step.rawValue)), JSONMember("outcome", .string(outcome.rawValue)),
            JSONMember("rows", rows.map { .number(JSONNumber($0)) } ?? .null),
            JSONMember("bytes", bytes.map { .number(JSONNumber($0)) } ?? .null),
            JSONMember("seconds", PipelineJSON.seconds(seconds)),
        ]
        if !warnings.isEmpty { members.append(JSONMember("warnings", .array(warnings.map(JSONValue.string)))) }
        if let failure {
            members.append(JSONMember("rule", .string(failure.rule)))
            members.append(JSONMember("message", .string(failure.message)))
            if !failure.findings.isEmpty {
                members.append(JSONMember("findings", .array(failure.findings.map(\.json))))
            }
        }
        return members
    }
}

/// Why a step failed: the rule, a message, and the verifier's findings when there are any.
public struct PipelineStepFailure: Sendable {
    public let rule: String
    public let message: String
    public let findings: [SeedFinding]
    /// The step's requests outlasted their retries (`--retries`): the run exits with the retries-exhausted status, as
    /// a command making the same requests would.
    public let retriesExhausted: Bool

    init(rule: String, message: String, findings: [SeedFinding] = [], retriesExhausted: Bool = false) {
        self.rule = rule
        self.message = message
        self.findings = findings
        self.retriesExhausted = retriesExhausted
    }
}
