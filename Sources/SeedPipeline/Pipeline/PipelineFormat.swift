import SynchroProtocol

/// Every member of the pipeline format by its path, with its JSON type (docs/pipelines.md; published as
/// `docs/pipeline.schema.json`, which a test holds equal to this table and to the parser's member lists). It types
/// the overrides of `--set key.path=value` and `SEEDKIT_PIPELINE_…` variables (``PipelineOverride``).
public enum PipelineFormat {
    /// A member's JSON type.
    public enum Kind: String, Sendable, Equatable {
        case string, integer, boolean
        /// An array of strings.
        case stringList = "string_list"
        case object
    }

    /// Every member path the parser reads, parents before their members.
    public static let members: [(path: String, kind: Kind)] = [
        ("name", .string),
        ("source", .object),
        ("source.embedded", .object), ("source.embedded.dataset", .string), ("source.embedded.rows", .integer),
        ("source.server", .object), ("source.server.url", .string), ("source.server.operator_token_env", .string),
        ("source.server.user_token_env", .string),
        ("source.postgresql", .object), ("source.postgresql.connection", .string),
        ("source.postgresql.server_url", .string), ("source.postgresql.user_token_env", .string),
        ("source.delta", .object), ("source.delta.definition", .string), ("source.delta.base_url", .string),
        ("scopes", .stringList),
        ("page_limit", .integer),
        ("pack", .object), ("pack.level", .integer),
        ("rehearsal", .object), ("rehearsal.user", .string), ("rehearsal.rebuild_compare", .boolean),
        ("rehearsal.app_version", .string),
        ("publish", .object), ("publish.directory", .string),
        ("steps", .stringList),
        ("sign", .object), ("sign.key_file", .string), ("sign.key_env", .string),
    ]

    /// The type of the member at `path`, or nil when the format has no such member.
    public static func kind(of path: String) -> Kind? {
        members.first { $0.path == path }?.kind
    }

    /// The environment variables that override members: `SEEDKIT_PIPELINE_` and the path in capitals with `__` for
    /// each dot (`SEEDKIT_PIPELINE_SOURCE__SERVER__URL`, `SEEDKIT_PIPELINE_PAGE_LIMIT`).
    public static let environmentPrefix = "SEEDKIT_PIPELINE_"

    /// The overrides the environment carries, in name order; a variable naming no member is refused by name.
    public static func overrides(
        environment: [String: String]
    ) throws(PipelineDefinitionError) -> [PipelineOverride] {
        var overrides: [PipelineOverride] = []
        for (name, value) in environment.sorted(by: { $0.key < $1.key }) where name.hasPrefix(environmentPrefix) {
            let path = name.dropFirst(environmentPrefix.count).lowercased()
                .replacingOccurrences(of: "__", with: ".")
            overrides.append(try PipelineOverride(path: path, text: value, origin: name))
        }
        return overrides
    }
}

/// One member set from outside the file: `--set key.path=value` or a `SEEDKIT_PIPELINE_…` variable, typed by
/// ``PipelineFormat``: a string as given, an integer in decimal, a boolean `true`/`false`, a list as a JSON array
/// or comma-separated. An unknown path or a value of the wrong type is refused by the member's path (never echoing
/// the value).
public struct PipelineOverride: Sendable {
    public let path: String
    public let value: JSONValue

    /// Parses `key.path=value` as given to `--set`.
    public init(parsing assignment: String) throws(PipelineDefinitionError) {
        guard let equals = assignment.firstIndex(of: "="), equals != assignment.startIndex else {
            throw .invalidValue(member: "--set", reason: "must be KEY.PATH=VALUE, for example source.server.url=URL")
        }
        try self.init(
            path: String(assignment[..<equals]), text: String(assignment[assignment.index(after: equals)...]),
            origin: "--set")
    }

    /// The override of `path` with `text` typed by the format; `origin` names where it came from in errors.
    public init(path: String, text: String, origin: String) throws(PipelineDefinitionError) {
        guard let kind = PipelineFormat.kind(of: path) else { throw .unknownMember(member: path) }
        self.path = path
        switch kind {
        case .string:
            value = .string(text)
        case .integer:
            guard let number = Int64(text) else { throw .wrongType(member: path, expected: "an integer") }
            value = .number(JSONNumber(number))
        case .boolean:
            guard text == "true" || text == "false" else { throw .wrongType(member: path, expected: "true or false") }
            value = .bool(text == "true")
        case .stringList:
            if text.hasPrefix("[") {
                guard let array = (try? StrictJSONParser().parse(Array(text.utf8)))?.arrayValue else {
                    throw .wrongType(member: path, expected: "an array")
                }
                value = .array(array)
            } else {
                value = .array(text.split(separator: ",", omittingEmptySubsequences: false).map { .string(String($0)) })
            }
        case .object:
            throw .invalidValue(member: path, reason: "is an object; set its members (\(origin) \(path).NAME=VALUE)")
        }
    }

    /// `document` with this member set, creating the objects on its path.
    func apply(to document: JSONValue) throws(PipelineDefinitionError) -> JSONValue {
        try Self.set(value, at: path.split(separator: ".").map(String.init)[...], in: document, prefix: "")
    }

    private static func set(
        _ value: JSONValue, at path: ArraySlice<String>, in node: JSONValue, prefix: String
    ) throws(PipelineDefinitionError) -> JSONValue {
        guard let name = path.first else { return value }
        guard let object = node.objectValue else {
            throw .wrongType(member: prefix.isEmpty ? "(document)" : prefix, expected: "an object")
        }
        let member = prefix.isEmpty ? name : prefix + "." + name
        let child = object[name] ?? .object(JSONObject([JSONMember]()))
        let updated = try set(value, at: path.dropFirst(), in: child, prefix: member)
        var members = object.members.filter { $0.key != name }
        members.append(JSONMember(name, updated))
        return .object(JSONObject(members))
    }
}
