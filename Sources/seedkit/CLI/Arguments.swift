/// A command's arguments split into positionals and `--name[=value]` options, checked against the command's
/// declaration (``CommandSpec``): an unknown option (with "did you mean"), a missing value, a value outside its
/// declared kind or range, or a missing required option is a usage error before the command runs. Every command
/// also accepts `--quiet` or `--verbose` (``Verbosity``), parsed here once for all of them.
struct Arguments {
    /// The declaration the words were parsed against.
    let spec: CommandSpec
    var positionals: [String] = []
    /// The flags given, other than `--quiet` and `--verbose` (those are ``verbosity``).
    var flags: Set<String> = []
    /// `--quiet`, `--verbose` or neither.
    var verbosity = Verbosity.normal
    /// The last value of each valued option given.
    var values: [String: String] = [:]
    /// Every value of each valued option, in order (for repeatable options such as `--trusted-key`).
    var allValues: [String: [String]] = [:]

    /// A usage error: what was wrong with the command line. `--help` is reported the same way, carrying the
    /// command's help text (``HelpText/command(_:)``), so every command's help lists exactly what its parser takes.
    struct UsageError: Error {
        let message: String
        /// The rule the command line broke, as the JSON error object names it (`usage` unless more precise).
        var rule: String
        /// Set when the words asked for help: the text to print.
        var help: String?

        init(message: String, rule: String = "usage", help: String? = nil) {
            self.message = message
            self.rule = rule
            self.help = help
        }
    }

    /// Parses `words` against `spec`: flags take no value, other options one (`--name value` or `--name=value`).
    init(_ words: [String], spec: CommandSpec) throws(UsageError) {
        self.spec = spec
        let beforeSeparator = words.prefix { $0 != "--" }
        if beforeSeparator.contains("--help") || beforeSeparator.contains("-h") {
            throw UsageError(message: "help requested", help: HelpText.command(spec))
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
            guard let option = spec.option(name) else {
                if let refusal = SecretInput.refusal(name) { throw refusal }
                throw UsageError(message: NearMiss.message(
                    "unknown option --\(name)", word: name, among: spec.allOptions.map(\.name), prefix: "--"))
            }
            if option.isFlag {
                guard inlineValue == nil else { throw UsageError(message: "option --\(name) takes no value") }
                flags.insert(name)
                continue
            }
            let value: String
            if let inlineValue {
                value = inlineValue
            } else {
                guard i < words.count else {
                    throw UsageError(message: "option --\(name) needs a value (\(option.placeholder))")
                }
                value = words[i]
                i += 1
            }
            if let error = option.check(value) { throw error }
            values[name] = value
            allValues[name, default: []].append(value)
        }
        verbosity = try Verbosity(flags: flags)
        flags.subtract(Verbosity.flags)
        for option in spec.options where option.required && values[option.name] == nil {
            throw UsageError(message: "\(spec.name) needs \(option.synopsisWord)")
        }
    }

    /// The option's value, else its declared default (for options whose default is a literal value).
    func value(_ name: String) -> String? {
        values[name] ?? spec.option(name)?.defaultValue
    }

    /// The value of a declared `.integer` option (already checked against its range), or nil when absent.
    func integer(_ name: String) -> Int64? {
        value(name).flatMap { Int64($0) }
    }

    /// The value of a declared `.byteCount` option in bytes, or nil when absent.
    func byteCount(_ name: String) -> Int64? {
        value(name).flatMap(OptionSpec.byteCount)
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
