import Glibc
import SynchroProtocol
import SystemKit

/// The one way a command reports that it failed (docs/cli.md, "Failures"): on standard error
/// `seedkit: MESSAGE (RULE)` — the rule always in the text, as in JSON — and, with `--json`, one last JSON object on
/// standard output carrying the same `rule`, `message` and `exit_status`: `{"error":{…}}` for commands that print
/// one document, `{"event":"error",…}` as the last line of a JSON Lines stream (`sync`, `rebuild`, `pipeline`).
struct FailureReport {
    let rule: String
    let message: String
    let status: ExitStatus
    /// Further members of the JSON object (`blocked`, `next_attempt_at_ms`, `member`).
    var extra: [JSONMember] = []

    /// The commands whose `--json` output is a JSON Lines event stream.
    static let streamingCommands: Set<String> = ["sync", "rebuild", "pipeline"]

    /// Prints the report for `command` and returns its exit status.
    @discardableResult
    func print(command: String, json: Bool) -> ExitStatus {
        if json {
            let fields = [
                JSONMember("rule", .string(rule)), JSONMember("message", .string(message)),
                JSONMember("exit_status", .number(JSONNumber(Int64(status.rawValue)))),
            ] + extra
            let object: JSONValue = Self.streamingCommands.contains(command)
                ? .object(JSONObject([JSONMember("event", .string("error"))] + fields))
                : .object(JSONObject([JSONMember("error", .object(JSONObject(fields)))]))
            if let bytes = try? CanonicalJSON.encode(object) { Terminal.out(bytes: bytes + [0x0A]) }
        }
        Terminal.err("seedkit: \(Self.text(message, rule: rule))\n")
        return status
    }

    /// `message (rule)`, unless the message already names the rule in parentheses.
    static func text(_ message: String, rule: String) -> String {
        message.contains("(\(rule))") ? message : "\(message) (\(rule))"
    }

    /// Reports a missing input file for `command` and returns exit status 2; nil when `path` exists.
    static func missing(_ path: String, command: String, json: Bool) -> ExitStatus? {
        guard !FileSystem.exists(path) else { return nil }
        return missingInput(path).print(command: command, json: json)
    }

    /// A missing input file, the same for every command: `not_found`, exit status 2.
    static func missingInput(_ path: String) -> FailureReport {
        FailureReport(
            rule: "not_found", message: SystemError(operation: "open", path: path, code: ENOENT).description,
            status: .invalidInput)
    }
}
