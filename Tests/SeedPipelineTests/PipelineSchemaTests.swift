import Foundation
import SynchroProtocol
import Testing
import _SeedkitTestSupport
@testable import SeedPipeline

/// `docs/pipeline.schema.json` is the published pipeline format: it names exactly the members the parser accepts,
/// with the types `--set` uses (``PipelineFormat``), and the example pipelines validate against it.
@Suite struct PipelineSchemaTests {
    static func schema() throws -> JSONValue {
        let url = RepositoryLayout.root.appendingPathComponent("docs/pipeline.schema.json")
        return try StrictJSONParser().parse(Array(try Data(contentsOf: url)))
    }

    /// Every member path of the schema with its kind.
    static func members(of node: JSONValue, prefix: String = "") -> [String: PipelineFormat.Kind] {
        var found: [String: PipelineFormat.Kind] = [:]
        for member in node.objectValue?["properties"]?.objectValue?.members ?? [] {
            let path = prefix.isEmpty ? member.key : prefix + "." + member.key
            let property = member.value.objectValue
            switch property?["type"]?.stringValue {
            case "object":
                found[path] = .object
                found.merge(members(of: member.value, prefix: path)) { first, _ in first }
            case "array" where property?["items"]?.objectValue?["type"]?.stringValue == "string":
                found[path] = .stringList
            case "string": found[path] = .string
            case "integer": found[path] = .integer
            case "boolean": found[path] = .boolean
            default: Issue.record("\(path): a type the format does not use")
            }
        }
        return found
    }

    @Test func theSchemaNamesExactlyTheFormatsMembersWithTheirTypes() throws {
        let schema = Self.members(of: try Self.schema())
        let format = Dictionary(PipelineFormat.members.map { ($0.path, $0.kind) }) { first, _ in first }
        let schemaOnly = Set(schema.keys).subtracting(format.keys)
        let formatOnly = Set(format.keys).subtracting(schema.keys)
        #expect(schemaOnly.isEmpty && formatOnly.isEmpty, "schema only: \(schemaOnly); format only: \(formatOnly)")
        for (path, kind) in format { #expect(schema[path] == kind, "\(path)") }
    }

    @Test func theFormatNamesExactlyTheMembersTheParserAccepts() {
        let parser: [String: [String]] = [
            "": PipelineDefinition.rootMembers, "source": ["embedded", "server", "postgresql", "delta"],
            "source.embedded": PipelineDefinition.embeddedMembers, "source.delta": PipelineDefinition.deltaMembers, "source.server": PipelineDefinition.serverMembers,
            "source.postgresql": PipelineDefinition.postgresqlMembers, "pack": PipelineDefinition.packMembers,
            "rehearsal": PipelineDefinition.rehearsalMembers, "publish": PipelineDefinition.publishMembers,
            "sign": PipelineDefinition.signMembers,
        ]
        var format: [String: Set<String>] = [:]
        for (path, kind) in PipelineFormat.members {
            let parts = path.split(separator: ".").map(String.init)
            format[parts.dropLast().joined(separator: "."), default: []].insert(parts.last ?? "")
            if kind == .object { format[path, default: []] = format[path] ?? [] }
        }
        #expect(Set(format.keys) == Set(parser.keys))
        for (parent, names) in parser {
            #expect(format[parent] == Set(names), "members of \(parent.isEmpty ? "the document" : parent)")
        }
    }

    @Test func theExamplePipelinesValidateAgainstTheSchemaAndLoad() throws {
        let schema = try Self.schema()
        for name in ["demo.json", "staging.example.json", "delta.example.json"] {
            let url = RepositoryLayout.root.appendingPathComponent("pipelines/\(name)")
            let document = try StrictJSONParser().parse(Array(try Data(contentsOf: url)))
            let problems = SchemaCheck.problems(document, schema)
            #expect(problems.isEmpty, "\(name): \(problems)")
            _ = try PipelineDefinition.load(file: url.path, environment: [
                "SEEDKIT_STAGING_OPERATOR_TOKEN": "o", "SEEDKIT_STAGING_USER_TOKEN": "u",
            ])
        }
        // The checker can fail: an unknown member, a wrong type and an out-of-range number are each found.
        let bad = try StrictJSONParser().parse(Array(#"""
            {"source": {"embedded": {"dataset": "d"}}, "publish": {"directory": "o"}, "pack": {"level": 23},
             "page_limit": "50", "extra": 1}
            """#.utf8))
        #expect(SchemaCheck.problems(bad, schema).count == 3, "\(SchemaCheck.problems(bad, schema))")
        // A delta source with a member only a Synchro source uses is refused by the schema as by the parser.
        for extra in [#""scopes": ["a"]"#, #""page_limit": 10"#, #""rehearsal": {}"#] {
            let delta = try StrictJSONParser().parse(Array("""
                {"source": {"delta": {"definition": "d.json"}}, "publish": {"directory": "o"}, \(extra)}
                """.utf8))
            #expect(SchemaCheck.problems(delta, schema).count == 1, "\(extra): \(SchemaCheck.problems(delta, schema))")
        }
    }

    @Test func setOverridesAreTypedByTheFormatAndRefuseUnknownMembers() throws {
        let json = #"{"source": {"embedded": {"dataset": "d", "rows": 10}}, "publish": {"directory": "out"}}"#
        let overrides = [
            try PipelineOverride(parsing: "page_limit=50"), try PipelineOverride(parsing: "source.embedded.rows=20"),
            try PipelineOverride(parsing: "rehearsal.user=bob"), try PipelineOverride(parsing: "scopes=catalog"),
            try PipelineOverride(parsing: "rehearsal.rebuild_compare=true"),
        ]
        let definition = try PipelineDefinition(
            bytes: Array(json.utf8), baseDirectory: "/pipelines", environment: [:], overrides: overrides)
        #expect(definition.pageLimit == 50 && definition.rehearsal.user == "bob" && definition.scopes == ["catalog"])
        #expect(definition.rehearsal.rebuildCompare)
        if case .embedded(_, let rows) = definition.source { #expect(rows == 20) } else { Issue.record("source") }
        #expect(throws: PipelineDefinitionError.unknownMember(member: "source.embeded.rows")) {
            try PipelineOverride(parsing: "source.embeded.rows=1")
        }
        #expect(throws: PipelineDefinitionError.wrongType(member: "page_limit", expected: "an integer")) {
            try PipelineOverride(parsing: "page_limit=many")
        }
        let environment = try PipelineFormat.overrides(environment: [
            "SEEDKIT_PIPELINE_SOURCE__EMBEDDED__ROWS": "7", "SEEDKIT_PIPELINE_PAGE_LIMIT": "9", "HOME": "/",
        ])
        #expect(environment.map(\.path) == ["page_limit", "source.embedded.rows"])
        #expect(throws: PipelineDefinitionError.unknownMember(member: "no_such")) {
            try PipelineFormat.overrides(environment: ["SEEDKIT_PIPELINE_NO_SUCH": "1"])
        }
    }
}

/// The parts of JSON Schema 2020-12 the pipeline schema uses: type, properties, additionalProperties: false,
/// required, min/maxProperties, minimum/maximum, minLength, items, minItems, uniqueItems, enum, pattern, and the
/// combinators allOf, anyOf, not, if/then (a subschema without `type` applies to whatever the value is).
enum SchemaCheck {
    static func problems(_ value: JSONValue, _ schema: JSONValue, at path: String = "") -> [String] {
        guard let rules = schema.objectValue else { return [] }
        var problems: [String] = []
        let here = path.isEmpty ? "(document)" : path
        for part in rules["allOf"]?.arrayValue ?? [] { problems += Self.problems(value, part, at: path) }
        if let condition = rules["if"], Self.problems(value, condition, at: path).isEmpty, let then = rules["then"] {
            problems += Self.problems(value, then, at: path)
        }
        if let forbidden = rules["not"], Self.problems(value, forbidden, at: path).isEmpty {
            problems.append("\(here): matches a form that is not allowed")
        }
        if let choices = rules["anyOf"]?.arrayValue,
           !choices.contains(where: { Self.problems(value, $0, at: path).isEmpty }) {
            problems.append("\(here): matches none of the allowed forms")
        }
        let declared = rules["type"]?.stringValue
        switch (declared ?? Self.implicitType(of: value), value) {
        case ("object", .object(let object)):
            let properties = rules["properties"]?.objectValue
            for member in object.members {
                let child = path.isEmpty ? member.key : path + "." + member.key
                if let property = properties?[member.key] {
                    problems += Self.problems(member.value, property, at: child)
                } else if rules["additionalProperties"] == .bool(false) {
                    problems.append("\(child): not allowed")
                }
            }
            for required in rules["required"]?.arrayValue ?? [] where object[required.stringValue ?? ""] == nil {
                problems.append("\(here): missing \(required.stringValue ?? "")")
            }
            if let least = rules["minProperties"]?.numberValue?.exactInt64, object.count < least {
                problems.append("\(here): too few members")
            }
            if let most = rules["maxProperties"]?.numberValue?.exactInt64, object.count > most {
                problems.append("\(here): too many members")
            }
        case ("array", .array(let items)):
            if let least = rules["minItems"]?.numberValue?.exactInt64, items.count < least {
                problems.append("\(here): too few items")
            }
            if rules["uniqueItems"] == .bool(true), Set(items).count != items.count {
                problems.append("\(here): repeats")
            }
            for (index, item) in items.enumerated() {
                problems += Self.problems(item, rules["items"] ?? .null, at: "\(here)[\(index)]")
            }
        case ("string", .string(let text)):
            if let least = rules["minLength"]?.numberValue?.exactInt64, text.count < least {
                problems.append("\(here): too short")
            }
            if let pattern = rules["pattern"]?.stringValue,
               text.range(of: pattern, options: .regularExpression) == nil {
                problems.append("\(here): does not match \(pattern)")
            }
        case ("integer", .number(let number)) where number.exactInt64 != nil:
            let integer = number.exactInt64 ?? 0
            if let minimum = rules["minimum"]?.numberValue?.exactInt64, integer < minimum {
                problems.append("\(here): below \(minimum)")
            }
            if let maximum = rules["maximum"]?.numberValue?.exactInt64, integer > maximum {
                problems.append("\(here): above \(maximum)")
            }
        case ("boolean", .bool):
            break
        default:
            if declared != nil { problems.append("\(here): not of type \(declared ?? "?")") }
        }
        if let allowed = rules["enum"]?.arrayValue, !allowed.contains(value) { problems.append("\(here): not allowed") }
        return problems
    }

    /// The type a subschema without `type` checks the value as: objects by their members, nothing else.
    private static func implicitType(of value: JSONValue) -> String? {
        if case .object = value { return "object" }
        return nil
    }
}
