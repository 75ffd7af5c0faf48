import Foundation
import SeedArtifacts
import SeedPipeline
import SynchroProtocol

/// `seedkit rehearse SEED.db[.zst] --server URL --token-env VAR`: installs a copy of the seed in a temporary
/// directory exactly as a device would, runs its first sync as the test user whose credential the variable holds,
/// and prints what the device experienced. Exit status 0 when every seeded scope continued from the seed and
/// verified (and matched a fresh rebuild with `--rebuild-compare`), 1 when not, 2 for usage or an unusable file.
enum RehearseCommand {
    static let spec = CommandSpec(
        "rehearse", "a seed's first sync on a copy installed as a device would",
        positionals: [PositionalSpec(placeholder: "SEED.db[.zst]", help: "the seed, plain or packed")],
        options: [
            .value("server", "URL", .text, "the server's base URL, http:// or https://", required: true),
            .secretVariable("token", "the variable holding the test user's bearer credential"),
            .secretFile("token", "the file holding the test user's bearer credential, instead of a variable"),
            .value("page-limit", "N", .integer(1...1000), "limit of pull pages",
                   default: "\(RehearsalOptions(server: "", credential: "").pageLimit)"),
            .value("app-version", "V", .version, "app_version and X-App-Version",
                   default: RehearsalOptions(server: "", credential: "").appVersion),
            .flag("rebuild-compare", "also rebuild every portable scope into a fresh store and compare digests"),
            SignatureGate.optionSpec,
            .json("one JSON report instead of text"),
        ] + NetworkOptions.specs)

    static func run(_ words: [String]) throws(Arguments.UsageError) -> ExitStatus {
        let arguments = try Arguments(words, spec: spec)
        try arguments.requirePositionals(atMost: 1, atLeast: 1)
        guard let server = arguments.values["server"], server.hasPrefix("http://") || server.hasPrefix("https://")
        else {
            throw Arguments.UsageError(message: "rehearse needs --server http(s)://HOST:PORT")
        }
        guard let token = try SecretInput.read(arguments, option: "token") else {
            throw Arguments.UsageError(
                message: "rehearse needs --token-env VAR or --token-file FILE (the test user's token)",
                rule: "credential_missing")
        }
        var options = RehearsalOptions(
            server: server, credential: token.value, rebuildCompare: arguments.flags.contains("rebuild-compare"))
        if let limit = arguments.integer("page-limit") { options.pageLimit = limit }
        if let version = arguments.values["app-version"] { options.appVersion = version }
        let json = arguments.flags.contains("json")
        let seed = arguments.positionals[0]
        let console = arguments.console("rehearse")
        let network = NetworkOptions(arguments)
        options.network = network.settings(command: "rehearse", json: json, console: console)
        let keys = try SignatureGate.trustedKeys(arguments)
        if let refused = SignatureGate.check(seed, keys: keys, asJSON: json, console: console) { return refused }
        console.detail("seed \(seed), installed in a new directory under \(NSTemporaryDirectory())")
        console.detail("server \(Console.displayURL(server)), credential from \(token.source), app version "
            + "\(options.appVersion), page limit \(options.pageLimit)"
            + (options.rebuildCompare ? ", then a rebuild of every portable scope to compare" : ""))
        let start = ContinuousClock.now
        do {
            let outcome = try SeedFileRehearsal.run(seed: seed, options: options)
            console.detail("rehearsed", since: start)
            print(outcome, seed: seed, json: json, console: console)
            return outcome.rehearsal.passed ? .success : .checkFailed
        } catch {
            if json {
                let object = JSONValue.object(JSONObject([
                    JSONMember("error", .object(JSONObject([
                        JSONMember("rule", .string(error.rule)), JSONMember("message", .string(error.description)),
                    ])))
                ]))
                Terminal.out(bytes: ((try? CanonicalJSON.encode(object)) ?? []) + [0x0A])
            }
            Terminal.err("seedkit: \(FailureReport.text("rehearse failed: \(error)", rule: error.rule))\n")
            for finding in (error.installFindings).prefix(20) { Terminal.err("  \(finding)\n") }
            if case .rehearsal(let failure) = error, failure.retriesExhausted { return .retriesExhausted }
            return error.isInvalidInput ? .invalidInput : .checkFailed
        }
    }

    private static func print(_ outcome: SeedFileRehearsal.Outcome, seed: String, json: Bool, console: Console) {
        let rehearsal = outcome.rehearsal
        if json {
            var members = rehearsal.json.objectValue?.members ?? []
            members.append(JSONMember("seed", .string(seed)))
            members.append(JSONMember("install", .object(JSONObject([
                JSONMember("checks", .number(JSONNumber(Int64(outcome.install.verification.checks)))),
                JSONMember("rows", .number(JSONNumber(Int64(outcome.install.verification.rows)))),
            ]))))
            Terminal.out(bytes: ((try? CanonicalJSON.encode(.object(JSONObject(members)))) ?? []) + [0x0A])
            return
        }
        console.info("installed \(seed) as a device would (\(outcome.install.verification.checks) checks passed)\n")
        console.info(PipelineText.rehearsal(rehearsal))
        // A failed rehearsal is the check's result, printed even when quiet.
        if rehearsal.passed {
            console.info("rehearsal passed: every seeded scope continued from the seed and verified\n")
        } else {
            console.result("rehearsal failed: a device would not continue every seeded scope from the seed\n")
        }
    }
}

extension SeedFileRehearsalError {
    /// The verifier's findings when the seed failed the install checks.
    fileprivate var installFindings: [SeedFinding] {
        if case .install(let error) = self { return error.findings }
        return []
    }
}
