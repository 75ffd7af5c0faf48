import SeedArtifacts

/// Routes `seedkit <command> …` to one subcommand and maps usage errors to exit status 2.
enum CommandDispatcher {
    static let usage = """
        usage: seedkit <command> [arguments]

        commands:
          conformance vectors FILE [--json]   run upstream conformance vectors
          digest manifest [FILE]              schema hash of a manifest
          digest row [FILE]                   row identity and row checksum
          digest scope [FILE]                 scope checksum and cardinality
          digest push [FILE] --user ID        fingerprints and push-limit measures
          serve --dataset DIR [--token-file FILE] [options]
                                              run the reference protocol 3 server
          serve --protocol delta --entities A,B [--store FILE] [--listen HOST:PORT] [--token-env VAR] [--rows N]
                                              run the reference delta-sync server (seeds 003 and 004)
          sync --server URL --db FILE [--token-env VAR] [--until-current] [--schema-reset] [options]
                                              one headless sync cycle of a client store
          validate --db FILE [--server URL --token-env VAR] [--json]
                                              every consistency check of a client store, read-only
          rebuild --db FILE [--scope ID ...] --server URL --token-env VAR [options]
                                              a new rebuild attempt of named (or all) scopes, then a pull
          sql --db FILE [--json] SQL [ARG ...]
                                              one application SQL statement on a client store
          inspect --db FILE [--json]          a client store's sync state, without secrets
          pack FILE [--out FILE.zst] [--level N] [--workers N] [--patch-from PREVIOUS.db] [--force] [--json]
                                              compress a seed into one checksummed zstd frame (or a patch)
          unpack FILE.zst [--out FILE] [--max-output-bytes N] [--patch-from PREVIOUS.db] [--trusted-key PUB ...]
                 [--force] [--json]           decompress a packed seed, refusing damage and oversize
          export --source URL --out FILE [--token-env VAR | --token-file FILE] [--scopes A,B] [--page-limit N]
                 [--wait SECONDS] [--force] [--json]
                                              export a verified portable seed from a server or PostgreSQL
          verify SEED.db[.zst] [--trusted-key PUB ...] [--json]
                                              every publication and device-installer check of a seed
          keygen --out KEY [--json]           a new Ed25519 signing key (KEY mode 0600) and KEY.pub
          sign FILE ... (--key-file KEY | --key-env VAR) [--force] [--json]
                                              sign files into provenance.intoto.jsonl beside them
          install SEED.db[.zst] --to APP.db [--trusted-key PUB ...] [--json]
                                              install a seed as a device's first database, never overwriting
          pipeline run FILE [--json] [--dry-run] [--force] [--wait SECONDS]
                                              export, verify, pack, install, rehearse and publish a seed
          pipeline clean FILE [--json]        remove the scratch directories of killed runs
          rehearse SEED.db[.zst] --server URL --token-env VAR [--page-limit N] [--app-version V]
                 [--rebuild-compare] [--trusted-key PUB ...] [--json]
                                              a seed's first sync on a copy installed as a device would
          rehearse DELTA-SEED.db[.zst] --source delta:FILE.json [--json]
                                              a delta seed warmed from its checkpoints, compared with a full pull
          warm --source delta:FILE.json --db APP.db [--json]
                                              bring a database installed from a delta seed current
          help [COMMAND]                      this text, or one command's synopsis and options
          --version                           the version (as recorded in evidence files)
          COMMAND --help                      the same for COMMAND

        Every command also takes --quiet (print only its results and errors) or --verbose (add detail on
        standard error: steps, scopes, timings, the files and URLs used); --json output is the same with either.
        JSON input comes from FILE or standard input; see docs/cli.md. No command takes a secret on the command
        line: credentials come from environment variables (--token-env VAR) or files (--token-file FILE).

        """

    static func run(_ words: [String]) -> ExitStatus {
        guard let command = words.first else {
            Terminal.err(usage)
            return .invalidInput
        }
        let rest = Array(words.dropFirst())
        // `pipeline --help` (a group without its subcommand) is `help pipeline`, not a usage error.
        if subcommands[command] != nil, let first = rest.first, first == "--help" || first == "-h" {
            return help(command)
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
            case "warm": return try WarmCommand.run(rest)
            case "--version", "version":
                // The version recorded in every evidence file, so a CI log ties a seed to the binary that built it.
                Terminal.out("seedkit \(SeedArtifacts.toolVersion)\n")
                return .success
            case "help", "--help", "-h":
                guard let topic = rest.first else {
                    Terminal.out(usage)
                    return .success
                }
                return help(topic)
            default:
                throw Arguments.UsageError(message: NearMiss.message(
                    "unknown command \(command)", word: command, among: commands))
            }
        } catch {
            if let options = error.help {
                Terminal.out(synopsis(command) + options)
                return .success
            }
            let json = rest.prefix { $0 != "--" }.contains("--json")
            FailureReport(rule: error.rule, message: error.message, status: .invalidInput)
                .print(command: command, json: json)
            let lines = synopsis(command)
            Terminal.err(lines.isEmpty ? "run seedkit help for the commands\n" : lines + "run seedkit help \(command) for its options\n")
            return .invalidInput
        }
    }

    /// Every command name, for "did you mean".
    static let commands = [
        "conformance", "digest", "serve", "sync", "validate", "rebuild", "sql", "inspect", "pack", "unpack", "export",
        "verify", "install", "pipeline", "rehearse", "warm", "help",
    ]

    /// Commands whose first word names a subcommand, and the one whose options `help` shows.
    private static let subcommands = ["conformance": "vectors", "digest": "push", "pipeline": "run"]

    /// `seedkit help COMMAND`: the command's own `--help`.
    private static func help(_ command: String) -> ExitStatus {
        guard !synopsis(command).isEmpty, command != "help" else {
            Terminal.err("seedkit: no command \(command)\n\n\(usage)")
            return .invalidInput
        }
        return run([command] + (subcommands[command].map { [$0] } ?? []) + ["--help"])
    }

    /// The usage lines of `command` (its synopsis lines and their descriptions).
    static func synopsis(_ command: String) -> String {
        var lines: [Substring] = []
        var inCommand = false
        for line in usage.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("  ") && !line.hasPrefix("   ") {
                inCommand = line.dropFirst(2).split(separator: " ").first.map(String.init) == command
            } else if !line.hasPrefix("      ") {
                inCommand = false
            }
            if inCommand { lines.append(line) }
        }
        return lines.isEmpty ? "" : "usage:\n" + lines.joined(separator: "\n") + "\n"
    }
}
