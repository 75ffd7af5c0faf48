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
          serve --dataset DIR --token USER=SECRET [options]
                                              run the reference protocol 3 server
          sync --server URL --db FILE --token-env VAR [--until-current] [options]
                                              one headless sync cycle of a client store
          validate --db FILE [--server URL --token-env VAR] [--json]
                                              every consistency check of a client store, read-only
          rebuild --db FILE [--scope ID ...] --server URL --token-env VAR [options]
                                              a new rebuild attempt of named (or all) scopes, then a pull
          sql --db FILE [--json] SQL [ARG ...]
                                              one application SQL statement on a client store
          inspect --db FILE [--json]          a client store's sync state, without secrets
          pack FILE [--out FILE.zst] [--level N] [--force] [--json]
                                              compress a seed into one checksummed zstd frame
          unpack FILE.zst [--out FILE] [--max-output-bytes N] [--force] [--json]
                                              decompress a packed seed, refusing damage and oversize
          export --source URL --out FILE [--token-env VAR] [--scopes A,B] [--page-limit N] [--force] [--json]
                                              export a verified portable seed from a server
          verify SEED.db[.zst] [--json]       every publication and device-installer check of a seed
          install SEED.db[.zst] --to APP.db [--json]
                                              install a seed as a device's first database, never overwriting
          pipeline run FILE [--json] [--dry-run] [--force] [--quiet|--verbose]
                                              export, verify, pack, install, rehearse and publish a seed
          rehearse SEED.db[.zst] --server URL --token-env VAR [--rebuild-compare] [--json]
                                              a seed's first sync on a copy installed as a device would
          help                                this text

        JSON input comes from FILE or standard input; see docs/cli.md.

        """

    static func run(_ words: [String]) -> ExitStatus {
        guard let command = words.first else {
            Terminal.err(usage)
            return .invalidInput
        }
        let rest = Array(words.dropFirst())
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
            case "install": return try InstallCommand.run(rest)
            case "pipeline": return try PipelineCommand.run(rest)
            case "rehearse": return try RehearseCommand.run(rest)
            case "help", "--help", "-h":
                Terminal.out(usage)
                return .success
            default:
                throw Arguments.UsageError(message: "unknown command \(command)")
            }
        } catch {
            Terminal.err("seedkit: \(error.message)\n\n\(usage)")
            return .invalidInput
        }
    }
}
