import SynchroClient

/// `seedkit rebuild --db FILE [--scope ID …] --server URL --token-env VAR`: one sync cycle that, after connect and
/// push, starts a new rebuild attempt of the named scopes (every assigned scope without `--scope`) through the
/// engine's durable rebuild path, then pulls to the head (``SyncCycle/run(rebuilding:)``). The store must exist.
enum RebuildCommand {
    static let spec = CommandSpec(
        "rebuild", "a new rebuild attempt of named (or all) scopes, then a pull",
        options: SyncSession.options + [
            .value("scope", "ID", .text, "a scope to rebuild; every assigned scope when left out", repeatable: true),
        ])

    static func run(_ words: [String]) throws(Arguments.UsageError) -> ExitStatus {
        let arguments = try Arguments(words, spec: spec)
        let options = try SyncSession.Options(arguments, command: "rebuild")
        let scopes = arguments.allValues["scope"]
        guard scopes?.allSatisfy({ !$0.isEmpty }) ?? true else {
            throw Arguments.UsageError(message: "--scope needs a scope ID")
        }
        options.console.detail("rebuilding " + (scopes.map { "scope(s) \($0.joined(separator: ", "))" }
            ?? "every assigned scope"))
        return SyncSession.run(options, createStore: false) { cycle, output throws(SyncCycleError) in
            output.summary(try cycle.run(rebuilding: scopes))
        }
    }
}
