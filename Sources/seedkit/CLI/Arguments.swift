/// A subcommand's arguments split into positionals and `--name[=value]` options, checked against
/// what the subcommand accepts, so every unknown or incomplete option is a usage error. Every subcommand also
/// accepts `--quiet` or `--verbose` (``Verbosity``), parsed here once for all of them.
struct Arguments {
    var positionals: [String] = []
    /// The flags given, other than `--quiet` and `--verbose` (those are ``verbosity``).
    var flags: Set<String> = []
    /// `--quiet`, `--verbose` or neither.
    var verbosity = Verbosity.normal
    var values: [String: String] = [:]
    /// Every value of each valued option, in order (for repeatable options such as `--token`).
    var allValues: [String: [String]] = [:]

    /// A usage error: what was wrong with the command line. `--help` is reported the same way, carrying the
    /// options the command accepts, so every command's help lists exactly what its parser takes.
    struct UsageError: Error {
        let message: String
        /// The rule the command line broke, as the JSON error object names it (`usage` unless more precise).
        var rule: String
        /// Set when the words asked for help: the accepted options, one per line.
        var help: String?

        init(message: String, rule: String = "usage", help: String? = nil) {
            self.message = message
            self.rule = rule
            self.help = help
        }
    }

    /// Parses `words`; `flags` take no value, `valued` take one (`--name value` or `--name=value`). `--quiet` and
    /// `--verbose` are accepted besides `flags`.
    init(_ words: [String], flags commandFlags: Set<String> = [], valued: Set<String> = []) throws(UsageError) {
        let allowedFlags = commandFlags.union(Verbosity.flags)
        let beforeSeparator = words.prefix { $0 != "--" }
        if beforeSeparator.contains("--help") || beforeSeparator.contains("-h") {
            let lines = allowedFlags.sorted().map { "  --\($0)" } + valued.sorted().map { "  --\($0) VALUE" }
            throw UsageError(
                message: "help requested",
                help: lines.isEmpty ? "no options\n" : "options:\n" + lines.joined(separator: "\n") + "\n")
        }
        var i = 0
        var onlyPositionals = false
        while i < words.count {
            let word = words[i]
            i += 1
            if onlyPositionals || !word.hasPrefix("--") || word == "-" {
                positionals.append(word)
                continue
            }
            if word == "--" {
                onlyPositionals = true
                continue
            }
            let body = word.dropFirst(2)
            let name: String
            var inlineValue: String?
            if let equals = body.firstIndex(of: "=") {
                name = String(body[..<equals])
                inlineValue = String(body[body.index(after: equals)...])
            } else {
                name = String(body)
            }
            if allowedFlags.contains(name) {
                guard inlineValue == nil else { throw UsageError(message: "option --\(name) takes no value") }
                flags.insert(name)
            } else if valued.contains(name) {
                let value: String
                if let inlineValue {
                    value = inlineValue
                } else {
                    guard i < words.count else { throw UsageError(message: "option --\(name) needs a value") }
                    value = words[i]
                    i += 1
                }
                values[name] = value
                allValues[name, default: []].append(value)
            } else if let refusal = SecretInput.refusal(name) {
                throw refusal
            } else {
                throw UsageError(message: NearMiss.message(
                    "unknown option --\(name)", word: name, among: allowedFlags.union(valued), prefix: "--"))
            }
        }
        verbosity = try Verbosity(flags: flags)
        flags.subtract(Verbosity.flags)
    }

    /// The output channels of `command` under the parsed verbosity.
    func console(_ command: String) -> Console {
        Console(verbosity: verbosity, command: command)
    }

    /// At most `max` positionals, else a usage error.
    func requirePositionals(atMost max: Int, atLeast min: Int = 0) throws(UsageError) {
        if positionals.count > max { throw UsageError(message: "unexpected argument \(positionals[max])") }
        if positionals.count < min { throw UsageError(message: "missing argument") }
    }
}
