import SeedArtifacts
import SynchroProtocol

/// What a pipeline run did: each step's result, what was published and what a device would experience.
public struct PipelineReport: Sendable {
    public enum Outcome: String, Sendable {
        /// Every step passed and the publish directory received the new publication.
        case published
        /// The publication already matches the inputs; nothing was redone or rewritten.
        case upToDate = "up_to_date"
        /// Every listed step passed; the pipeline does not publish.
        case completed
        /// A dry run: the file and the source are valid.
        case validated
        /// A step failed; the publish directory was not touched.
        case failed
        /// SIGINT or SIGTERM stopped the run at a safe point before publishing; the publish directory was not
        /// touched and the scratch directory was removed.
        case interrupted
    }

    public let name: String
    public let outcome: Outcome
    /// Dry run only: whether a run would find the publication up to date.
    public let upToDate: Bool
    /// Every step in run order, including skipped and not-run ones.
    public let steps: [PipelineStepResult]
    public let publishDirectory: String
    /// The publication in the publish directory after the run (new or reused); nil when there is none.
    public let seed: PublishedSeed?
    public let export: SeedExportReport?
    public let verification: SeedVerificationReport?
    public let pack: PackReport?
    public let rehearsal: RehearsalReport?
    public let seconds: Double
    /// Dry run only: what a run needs from outside, each checked (``PipelineCheck``).
    public var checks: [PipelineCheck] = []
    /// A delta run's export, verification and rehearsal (``PipelineDeltaRun``), in the summary's shape: a delta seed
    /// has none of the Synchro reports above, and its summary members are filled from these instead.
    public internal(set) var delta: DeltaDetails?

    /// The summary members of a delta run (docs/pipelines.md, "Delta source"); `.null` for a step that did not run.
    public struct DeltaDetails: Sendable {
        public let export: JSONValue
        public let verification: JSONValue
        public let rehearsal: JSONValue
    }

    /// The failed step, when the run failed.
    public var failedStep: PipelineStepResult? {
        steps.first { $0.outcome == .failed }
    }

    /// The run found nothing wrong.
    public var passed: Bool { outcome != .failed && outcome != .interrupted }

    /// The final JSON Lines object: `{"event":"summary","outcome":…,"steps":[…],…}`.
    public var summaryJSON: JSONValue {
        var members = [
            JSONMember("event", .string("summary")),
            JSONMember("pipeline", .string(name)),
            JSONMember("outcome", .string(outcome.rawValue)),
            JSONMember("steps", .array(steps.map { .object(JSONObject($0.jsonMembers)) })),
            JSONMember("publish_directory", .string(publishDirectory)),
            JSONMember("seed", seed?.json ?? .null),
            JSONMember("export", export?.summaryJSON ?? delta?.export ?? .null),
            JSONMember("verification", verification?.summaryJSON ?? delta?.verification ?? .null),
            JSONMember("rehearsal", rehearsal?.json ?? delta?.rehearsal ?? .null),
            JSONMember("seconds", PipelineJSON.seconds(seconds)),
        ]
        if outcome == .validated { members.append(JSONMember("up_to_date", .bool(upToDate))) }
        if !checks.isEmpty { members.append(JSONMember("checks", .array(checks.map(\.json)))) }
        return .object(JSONObject(members))
    }
}

extension SeedExportReport {
    /// The summary's `export` of a Synchro run: `{"bytes","export_id","rows","scopes":[{"cardinality","id"}]}`.
    var summaryJSON: JSONValue {
        .object(JSONObject([
            JSONMember("rows", PipelineJSON.integer(rows)), JSONMember("bytes", PipelineJSON.integer(bytes)),
            JSONMember("export_id", .string(exportID)),
            JSONMember("scopes", .array(scopes.map { scope in
                .object(JSONObject([
                    JSONMember("id", .string(scope.id)), JSONMember("cardinality", PipelineJSON.integer(scope.cardinality)),
                ]))
            })),
        ]))
    }
}

extension SeedVerificationReport {
    /// The summary's `verification` of a Synchro run: `{"checks","findings","ok","rows"}` (findings counted; a
    /// failed step lists them).
    var summaryJSON: JSONValue {
        .object(JSONObject([
            JSONMember("checks", PipelineJSON.integer(checks)), JSONMember("rows", PipelineJSON.integer(rows)),
            JSONMember("findings", PipelineJSON.integer(findings.count)), JSONMember("ok", .bool(ok)),
        ]))
    }
}
