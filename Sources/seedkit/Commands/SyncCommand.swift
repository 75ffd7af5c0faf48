import Foundation
import SeedPipeline
import SynchroClient
import SynchroHTTP
import SynchroProtocol

/// `seedkit sync`: one complete sync cycle of a client store against a protocol 3 server
/// (ARCHITECTURE.md, "Headless sync"), or with `--until-current` cycles until nothing is left to push and every
/// scope is verified at the head. `--schema-reset` is the explicit recovery of an `unsupported` schema by an
/// upgraded client (``SyncCycle/runSchemaReset()``); it is never done without being asked for.
/// `--retry-after-error` is the explicit `retry` recovery of a stored blocking error
/// (``SyncCycle/acknowledgeBlockingError()``): without it a stored error refuses every sync.
///
/// The store at `--db` is created on first use; its client ID is the one the store is bound to, else
/// `--client-id`, else a new UUID. The bearer secret comes from the variable `--token-env` names, the file
/// `--token-file` names, or `SEEDKIT_TOKEN` — never from the command line (``SecretInput``); it is never printed.
enum SyncCommand {
    static let spec = CommandSpec(
        "sync", "one headless sync cycle of a client store",
        options: SyncSession.options + [
            .flag("until-current", "run cycles until nothing is left to push and every scope is verified (at most 10)"),
            .flag("schema-reset", "the explicit recovery of an unsupported schema by an upgraded client"),
            .flag("retry-after-error", "clear a stored blocking error whose recovery is retry, then sync"),
        ])

    static func run(_ words: [String]) throws(Arguments.UsageError) -> ExitStatus {
        let arguments = try Arguments(words, spec: spec)
        let options = try SyncSession.Options(arguments, command: "sync")
        return SyncSession.run(options, createStore: true) { cycle, output throws(SyncCycleError) in
            if arguments.flags.contains("retry-after-error") {
                // Clears only an error whose recovery is `retry`; any other stored error still refuses the cycle.
                try cycle.acknowledgeBlockingError()
            }
            if arguments.flags.contains("schema-reset") {
                // The explicit recovery of an `unsupported` schema; later cycles are ordinary ones.
                output.summary(try cycle.runSchemaReset())
                if arguments.flags.contains("until-current") {
                    for summary in try cycle.runUntilCurrent() { output.summary(summary) }
                }
            } else if arguments.flags.contains("until-current") {
                for summary in try cycle.runUntilCurrent() { output.summary(summary) }
            } else {
                output.summary(try cycle.run())
            }
        }
    }

    /// The bearer secret: from the variable `--token-env` names, the file `--token-file` names, else
    /// `SEEDKIT_TOKEN`.
    static func credential(_ arguments: Arguments) throws(Arguments.UsageError) -> SecretInput {
        guard let secret = try SecretInput.read(arguments, option: "token") else {
            throw Arguments.UsageError(
                message: "a credential is needed: --token-env VAR, --token-file FILE or the variable SEEDKIT_TOKEN",
                rule: "credential_missing")
        }
        return secret
    }
}

/// What `sync` and `rebuild` share: the options, the store, the transport and the cycle.
enum SyncSession {
    /// The options both commands accept.
    static let options: [OptionSpec] = [
        .value("server", "URL", .text, "the server's base URL, http:// or https://", required: true),
        .value("db", "FILE", .path, "the client store; sync creates it when missing", required: true),
        .secretVariable("token", "the variable holding the bearer credential", default: "SEEDKIT_TOKEN"),
        .secretFile("token", "the file holding the bearer credential (one line), instead of a variable"),
        .value("client-id", "ID", .text, "the client ID of a fresh store; a store keeps the one it bound",
               default: "a new UUID"),
        .value("app-version", "V", .version, "app_version and X-App-Version", default: "1.0.0"),
        .value("page-limit", "N", .integer(1...1000), "limit of pull pages and new rebuild attempts", default: "100"),
        .flag("require-tls", "refuse an http:// server that is not on this machine"),
        .json("JSON Lines events on standard output instead of progress lines"),
    ] + NetworkOptions.specs

    /// The parsed common options.
    struct Options {
        let server: String
        let path: String
        let token: String
        let clientID: String?
        let appVersion: String
        let pageLimit: Int64
        let json: Bool
        let console: Console
        /// `--timeout` and `--retries`.
        let network: NetworkOptions
        /// Where the credential came from, for `--verbose` (a variable's or an option's name, never the value).
        let credentialSource: String

        init(_ arguments: Arguments, command: String) throws(Arguments.UsageError) {
            // Not `requirePositionals`: its message echoes the word, which could be a misplaced secret.
            guard arguments.positionals.isEmpty else {
                throw Arguments.UsageError(message: "\(command) takes no positional arguments")
            }
            let server = arguments.values["server"] ?? ""
            guard server.hasPrefix("http://") || server.hasPrefix("https://") else {
                throw Arguments.UsageError(message: "--server needs an http:// or https:// URL")
            }
            if PlainBearer.isExposed(server) && arguments.flags.contains("require-tls") {
                throw Arguments.UsageError(
                    message: "--require-tls: --server is http:// to a host that is not this machine; "
                        + "the bearer credential would travel unencrypted")
            }
            guard let path = arguments.values["db"], !path.isEmpty else {
                throw Arguments.UsageError(message: "\(command) needs --db FILE")
            }
            let secret = try SyncCommand.credential(arguments)
            token = secret.value
            credentialSource = secret.source
            appVersion = arguments.value("app-version") ?? ""
            self.server = server
            self.path = path
            pageLimit = arguments.integer("page-limit") ?? 0
            network = NetworkOptions(arguments)
            clientID = arguments.values["client-id"]
            json = arguments.flags.contains("json")
            console = arguments.console(command)
        }
    }

    /// Opens the store (creating it only when `createStore`), builds the cycle and runs `body` with it; a cycle
    /// failure is printed and exits 1 (3 when a stored refusal blocks, 4 when retries ran out).
    static func run(
        _ options: Options, createStore: Bool,
        _ body: (SyncCycle, SyncOutput) throws(SyncCycleError) -> Void
    ) -> ExitStatus {
        if PlainBearer.isExposed(options.server) { Terminal.err(PlainBearer.warning(options.server)) }
        let output = SyncOutput(
            json: options.json, console: options.console, server: options.server, attempts: options.network.attempts)
        let console = options.console
        let existed = FileManager.default.fileExists(atPath: options.path)
        guard createStore || existed else {
            return FailureReport.missingInput(options.path).print(command: "sync", json: options.json)
        }
        let store: ClientStore
        do {
            store = try openStore(path: options.path, clientID: options.clientID)
        } catch let error as StoreOpenError {
            return FailureReport(
                rule: error.isUsage ? "invalid_client_id" : "store_unusable", message: error.message,
                status: error.isUsage ? .invalidInput : .checkFailed
            ).print(command: "sync", json: options.json)
        } catch where StoreInUse.matches(error) {
            StoreInUse.report(error, json: options.json)
            return .locked
        } catch {
            return FailureReport(
                rule: "store_unusable",
                message: "cannot open the client store: \(error)", status: .checkFailed
            ).print(command: "sync", json: options.json)
        }
        defer { store.close() }
        console.detail("store \(options.path)\(existed ? "" : " (created)")")
        console.detail("server \(Console.displayURL(options.server)), credential from \(options.credentialSource), "
            + "app version \(options.appVersion), page limit \(options.pageLimit)")
        console.detail(options.network.summary)
        let transport: HTTPSyncTransport
        do {
            transport = try HTTPSyncTransport(
                baseURL: options.server, credential: options.token, appVersion: options.appVersion,
                timeout: options.network.timeout)
        } catch {
            return FailureReport(
                rule: "transport_failed", message: "cannot set up the transport: \(error)", status: .checkFailed
            ).print(command: "sync", json: options.json)
        }
        let context = SyncContext(
            store: store, transport: transport, platform: "linux", appVersion: options.appVersion,
            pageLimit: options.pageLimit)
        let cycle = SyncCycle(
            context: context, configuration: SyncCycle.Configuration(retry: options.network.syncRetryPolicy),
            delay: NetworkOptions.sleep, events: output.event)
        let start = ContinuousClock.now
        do throws(SyncCycleError) {
            try body(cycle, output)
            console.detail("finished", since: start)
            return .success
        } catch {
            console.detail("failed", since: start)
            if case .retriesExhausted = error {
                let deadline = (try? store.backoff())?.nextRetryAtMilliseconds
                output.failure(
                    error, status: .retriesExhausted, nextAttempt: deadline,
                    now: store.configuration.clock.nowMilliseconds())
                return .retriesExhausted
            }
            let status: ExitStatus = if case .blocked = error { .blocked } else { .checkFailed }
            output.failure(error, status: status)
            if error.code == "auth_required" || error.code == "forbidden" {
                // Which credential to fix: the user's, from where it was read.
                Terminal.err("seedkit: the server refused the user credential from \(options.credentialSource); "
                    + "fix it there\n")
            }
            return status
        }
    }

    /// Why the store could not be opened with a usable client ID.
    private struct StoreOpenError: Error {
        let message: String
        let isUsage: Bool
    }

    /// Opens (creating when missing) the store. A store already bound to a client ID keeps it; a fresh one
    /// uses `--client-id` or a new UUID, which connect binds before it sends anything. `--client-id` must name the
    /// bound ID or one the store left after a lost first-connect response (docs/cli.md, "Client IDs"): a job that
    /// always passes the ID it started with keeps working after the engine replaced it.
    private static func openStore(path: String, clientID requested: String?) throws -> ClientStore {
        let provisional = requested ?? UUID().uuidString.lowercased()
        let store: ClientStore
        do {
            store = try ClientStore(configuration: ClientStoreConfiguration(path: path, clientID: provisional))
        } catch {
            // Matching the typed error by pattern here crashes the 6.3 compiler (SILGen ownership), hence `if`.
            if error.rule == "invalid_configuration" {
                throw StoreOpenError(message: "--client-id: \(error)", isUsage: true)
            }
            throw error
        }
        guard let bound = try store.meta(.clientServerID), !bound.isEmpty, bound != provisional else { return store }
        let replaced = try store.inspect().replacedClientIDs
        store.close()
        if let requested, !replaced.contains(requested) {
            throw StoreOpenError(message: "the store is bound to another client ID than --client-id", isUsage: true)
        }
        return try ClientStore(configuration: ClientStoreConfiguration(path: path, clientID: bound))
    }
}
