import SynchroProtocol

/// `seedkit digest manifest|row|scope|push [FILE]`: JSON in, JSON out (see docs/cli.md).
enum DigestCommand {
    static func run(_ words: [String]) throws(Arguments.UsageError) -> ExitStatus {
        guard let what = words.first else {
            throw Arguments.UsageError(message: "digest needs one of manifest, row, scope, push")
        }
        let arguments = try Arguments(Array(words.dropFirst()), valued: what == "push" ? ["user"] : [])
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
