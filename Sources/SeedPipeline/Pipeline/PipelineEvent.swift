import SeedArtifacts
import SynchroProtocol

/// Progress of a pipeline run, for a terminal display or JSON Lines. Events name steps, counts and rules only:
/// never a credential, token, receipt or row value.
public enum PipelineEvent: Sendable {
    /// The source is ready: the embedded server has loaded its dataset, or the server answered.
    case sourceReady(kind: String, seconds: Double)
    /// A step began.
    case stepStarted(PipelineStep)
    /// A step advanced (rows exported, bytes packed, rows pulled).
    case progress(PipelineStep, PipelineProgress)
    /// A step ended, whatever its outcome.
    case stepFinished(PipelineStepResult)

    /// The JSON Lines object of the event; nil for ``progress`` (JSON Lines carry step boundaries only).
    public var json: JSONValue? {
        switch self {
        case .sourceReady(let kind, let seconds):
            .object(JSONObject([
                JSONMember("event", .string("source_ready")), JSONMember("source", .string(kind)),
                JSONMember("seconds", PipelineJSON.seconds(seconds)),
            ]))
        case .stepStarted(let step):
            .object(JSONObject([
                JSONMember("event", .string("step_started")), JSONMember("step", .string(step.rawValue)),
            ]))
        case .progress:
            nil
        case .stepFinished(let result):
            .object(JSONObject([JSONMember("event", .string("step_finished"))] + result.jsonMembers))
        }
    }
}

/// How far a step has come, in its unit.
public struct PipelineProgress: Sendable, Equatable {
    public enum Unit: String, Sendable {
        case rows
        case bytes
    }

    public let unit: Unit
    public let done: Int64
    /// The amount the step expects in all, when known.
    public let total: Int64?

    public init(unit: Unit, done: Int64, total: Int64?) {
        self.unit = unit
        self.done = done
        self.total = total
    }
}

/// Shared JSON spellings.
enum PipelineJSON {
    /// Seconds rounded to the millisecond.
    static func seconds(_ value: Double) -> JSONValue {
        JSONNumber((value * 1000).rounded() / 1000).map(JSONValue.number) ?? .null
    }

    static func integer(_ value: Int64) -> JSONValue {
        .number(JSONNumber(value))
    }

    static func integer(_ value: Int) -> JSONValue {
        .number(JSONNumber(Int64(value)))
    }
}
