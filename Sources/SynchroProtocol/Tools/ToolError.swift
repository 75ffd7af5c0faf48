/// A failure of a command-line tool entry point: the rule broken and a message that never
/// contains a credential, token, cursor or row value.
public struct ToolError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Stable snake_case name of the rule (for scripts).
    public let rule: String
    /// One sentence for people.
    public let message: String

    public init(rule: String, message: String) {
        self.rule = rule
        self.message = message
    }

    public var description: String { "\(rule): \(message)" }

    /// `{"error":{"message":…,"rule":…}}`, the JSON the CLI prints for invalid input.
    public var json: JSONValue {
        .object(JSONObject(["error": .object(JSONObject(["rule": .string(rule), "message": .string(message)]))]))
    }
}
