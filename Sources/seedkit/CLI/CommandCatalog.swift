/// Every command's declaration, in the order `seedkit help` lists them. Each declaration lives beside the command that
/// runs it (`ExportCommand.spec`); this is the one list of them that help, completion and the docs tables read.
enum CommandCatalog {
    static let all: [CommandSpec] = [
        ConformanceCommand.spec,
        DigestCommand.manifestSpec, DigestCommand.rowSpec, DigestCommand.scopeSpec, DigestCommand.pushSpec,
        ServeCommand.spec, SyncCommand.spec, ValidateCommand.spec, RebuildCommand.spec, SqlCommand.spec,
        InspectCommand.spec, PackCommand.spec, UnpackCommand.spec, ExportCommand.spec, VerifyCommand.spec,
        KeygenCommand.spec, SignCommand.spec, InstallCommand.spec, PipelineCommand.runSpec,
        PipelineCommand.validateSpec, PipelineCommand.cleanSpec, RehearseCommand.spec, CompletionScript.spec,
        HelpCommand.spec,
    ]

    /// The declaration whose words are `name` (`pipeline run`), if any.
    static func spec(named name: String) -> CommandSpec? {
        all.first { $0.name == name }
    }

    /// The declarations a command line selects: the one subcommand `subcommand` names, else every command whose first
    /// word is `command` (a whole group, such as `pipeline`).
    static func specs(_ command: String, subcommand: String?) -> [CommandSpec] {
        if let subcommand, let spec = spec(named: "\(command) \(subcommand)") { return [spec] }
        return all.filter { $0.words.first == command }
    }

    /// The first word of every command, in order, for "did you mean" and completion.
    static var commandNames: [String] {
        all.map(\.words[0]).reduce(into: []) { names, name in if !names.contains(name) { names.append(name) } }
    }

    /// Commands whose second word names a subcommand (`pipeline` → `run`, `clean`).
    static var groups: [(command: String, subcommands: [String])] {
        commandNames.compactMap { command in
            let subcommands = all.filter { $0.words.first == command && $0.words.count > 1 }.map { $0.words[1] }
            return subcommands.isEmpty ? nil : (command, subcommands)
        }
    }

    /// Whether `command` is a group.
    static func isGroup(_ command: String) -> Bool {
        groups.contains { $0.command == command }
    }
}

/// `seedkit help [COMMAND [SUBCOMMAND]]`: the usage, or one command's (or group's) help. `seedkit help --markdown FILE`
/// prints FILE (docs/cli.md) with its option regions rewritten from the declarations: what `make docs` writes back
/// and what the docs drift test compares.
enum HelpCommand {
    static let spec = CommandSpec(
        "help", "this text, one command's synopsis and options, or docs/cli.md's option tables",
        positionals: [
            PositionalSpec(
                placeholder: "COMMAND", help: "the command (or group) to describe", optional: true, kind: .text),
            PositionalSpec(placeholder: "SUBCOMMAND", help: "one subcommand of a group", optional: true, kind: .text),
        ],
        options: [
            .value("markdown", "FILE", .path, "print FILE with its option tables rewritten from the declarations"),
        ])

    static func run(_ words: [String]) throws(Arguments.UsageError) -> ExitStatus {
        let arguments = try Arguments(words, spec: spec)
        if let path = arguments.values["markdown"] {
            try arguments.requirePositionals(atMost: 0)
            let document: [UInt8]
            do {
                document = try Terminal.readInput(path)
            } catch {
                return FailureReport(rule: "not_found", message: error.message, status: .invalidInput)
                    .print(command: "help", json: false)
            }
            do throws(HelpText.UnknownRegion) {
                Terminal.out(try HelpText.rewrite(String(decoding: document, as: UTF8.self)))
                return .success
            } catch {
                throw Arguments.UsageError(
                    message: "\(path) has an options region for \(error.name), which is no command",
                    rule: "unknown_command")
            }
        }
        guard let topic = arguments.positionals.first else {
            Terminal.out(HelpText.usage)
            return .success
        }
        let specs = CommandCatalog.specs(topic, subcommand: arguments.positionals.dropFirst().first)
        guard !specs.isEmpty, topic != "help" || specs.count == 1 else {
            FailureReport(
                rule: "usage",
                message: NearMiss.message("no command \(topic)", word: topic, among: CommandCatalog.commandNames),
                status: .invalidInput
            ).print(command: "help", json: false)
            Terminal.err("run seedkit help for the commands\n")
            return .invalidInput
        }
        Terminal.out(HelpText.topic(specs))
        return .success
    }
}
