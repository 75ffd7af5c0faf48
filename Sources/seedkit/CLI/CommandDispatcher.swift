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
          sync --server URL --db FILE --token SECRET [options]
                                              one headless sync cycle of a client store
          sql --db FILE [--json] SQL [ARG ...]
                                              one application SQL statement on a client store
          inspect --db FILE [--json]          a client store's sync state, without secrets
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
            case "sql": return try SqlCommand.run(rest)
            case "inspect": return try InspectCommand.run(rest)
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
