import SynchroProtocol

/// `seedkit digest manifest|row|scope|push [FILE]`: JSON in, JSON out (see docs/cli.md).
enum DigestCommand {
    static let manifestSpec = CommandSpec(
        "digest manifest", "schema hash of a manifest", positionals: [input("the manifest JSON")])
    static let rowSpec = CommandSpec(
        "digest row", "row identity and row checksum", positionals: [input("the row JSON")])
    static let scopeSpec = CommandSpec(
        "digest scope", "scope checksum and cardinality", positionals: [input("the scope JSON")])
    static let pushSpec = CommandSpec(
        "digest push", "fingerprints and push-limit measures", positionals: [input("the push request JSON")],
        options: [.value("user", "ID", .text, "the authenticated user the push is measured for", required: true)])

    /// `[FILE]`: JSON from a file, or standard input when left out or `-`.
    private static func input(_ what: String) -> PositionalSpec {
        PositionalSpec(placeholder: "FILE", help: "\(what); standard input when left out or -", optional: true)
    }

    static func run(_ words: [String]) throws(Arguments.UsageError) -> ExitStatus {
        guard let what = words.first else {
            throw Arguments.UsageError(message: "digest needs one of manifest, row, scope, push")
        }
        guard let spec = CommandCatalog.spec(named: "digest \(what)") else {
            throw Arguments.UsageError(message: NearMiss.message(
                "unknown digest \(what); use manifest, row, scope or push", word: what,
                among: ["manifest", "row", "scope", "push"]))
        }
        let arguments = try Arguments(Array(words.dropFirst()), spec: spec)
        try arguments.requirePositionals(atMost: 1)

        let tool: ([UInt8]) throws(ToolError) -> JSONValue
        switch what {
        case "manifest": tool = DigestTool.manifest
        case "row": tool = DigestTool.row
        case "scope": tool = DigestTool.scope
        case "push":
            guard let user = arguments.values["user"], !user.isEmpty else {
                throw Arguments.UsageError(message: "digest push needs --user ID (the authenticated user)")
            }
            tool = { (bytes: [UInt8]) throws(ToolError) -> JSONValue in try DigestTool.push(bytes, user: user) }
        default:
            throw Arguments.UsageError(message: "unknown digest \(what); use manifest, row, scope or push")
        }

        // The digest is the requested data: --quiet has nothing to drop; --verbose tells what was read.
        let console = arguments.console("digest")
        let start = ContinuousClock.now
        let input: [UInt8]
        do {
            input = try Terminal.readInput(arguments.positionals.first)
        } catch {
            return report(ToolError(rule: "unreadable_input", message: error.message))
        }
        let source = arguments.positionals.first.flatMap { $0 == "-" ? nil : $0 } ?? "standard input"
        console.detail("\(what): \(input.count) octets from \(source)")
        do throws(ToolError) {
            let result = try tool(input)
            console.detail("\(what) computed", since: start)
            Terminal.out(bytes: (try? CanonicalJSON.encode(result)) ?? [])
            Terminal.out("\n")
            return .success
        } catch {
            return report(error)
        }
    }

    private static func report(_ error: ToolError) -> ExitStatus {
        Terminal.out(bytes: (try? CanonicalJSON.encode(error.json)) ?? [])
        Terminal.out("\n")
        Terminal.err("seedkit: \(error.message)\n")
        return .invalidInput
    }
}
