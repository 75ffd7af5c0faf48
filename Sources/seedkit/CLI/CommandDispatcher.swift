import SeedArtifacts

/// Routes `seedkit <command> …` to one subcommand and maps usage errors to exit status 2. What each command accepts
/// is declared once (``CommandCatalog``); the usage, help and usage-error synopses are rendered from it (``HelpText``).
enum CommandDispatcher {
    static func run(_ words: [String]) -> ExitStatus {
        guard let command = words.first else {
            Terminal.err(HelpText.usage)
            return .invalidInput
        }
        let rest = Array(words.dropFirst())
        // `pipeline --help` (a group without its subcommand) is `help pipeline`, not a usage error.
        if CommandCatalog.isGroup(command), let first = rest.first, first == "--help" || first == "-h" {
            Terminal.out(HelpText.topic(CommandCatalog.specs(command, subcommand: nil)))
            return .success
        }
        do throws(Arguments.UsageError) {
            switch command {
            case "conformance": return try ConformanceCommand.run(rest)
            case "digest": return try DigestCommand.run(rest)
            case "serve": return try ServeCommand.run(rest)
            case "sync": return try SyncCommand.run(rest)
            case "validate": return try ValidateCommand.run(rest)
            case "rebuild": return try RebuildCommand.run(rest)
            case "sql": return try SqlCommand.run(rest)
            case "inspect": return try InspectCommand.run(rest)
            case "pack": return try PackCommand.run(rest)
            case "unpack": return try UnpackCommand.run(rest)
            case "export": return try ExportCommand.run(rest)
            case "verify": return try VerifyCommand.run(rest)
            case "keygen": return try KeygenCommand.run(rest)
            case "sign": return try SignCommand.run(rest)
            case "install": return try InstallCommand.run(rest)
            case "pipeline": return try PipelineCommand.run(rest)
            case "rehearse": return try RehearseCommand.run(rest)
            case "completion": return try CompletionScript.run(rest)
            case "--version", "version":
                // The version recorded in every evidence file, so a CI log ties a seed to the binary that built it.
                Terminal.out("seedkit \(SeedArtifacts.toolVersion)\n")
                return .success
            case "help", "--help", "-h": return try HelpCommand.run(rest)
            default:
                throw Arguments.UsageError(message: NearMiss.message(
                    "unknown command \(command)", word: command, among: CommandCatalog.commandNames))
            }
        } catch {
            if let help = error.help {
                Terminal.out(help)
                return .success
            }
            let json = rest.prefix { $0 != "--" }.contains("--json")
            FailureReport(rule: error.rule, message: error.message, status: .invalidInput)
                .print(command: command, json: json)
            let specs = CommandCatalog.specs(command, subcommand: rest.first)
            let topic = specs.count == 1 ? specs[0].name : command
            Terminal.err(specs.isEmpty ? "run seedkit help for the commands\n"
                : HelpText.synopsis(specs) + "run seedkit help \(topic) for its options\n")
            return .invalidInput
        }
    }
}
