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
    ]

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
        let output = SyncOutput(json: options.json, console: options.console)
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
        let transport: HTTPSyncTransport
        do {
            transport = try HTTPSyncTransport(
                baseURL: options.server, credential: options.token, appVersion: options.appVersion)
        } catch {
            return FailureReport(
                rule: "transport_failed", message: "cannot set up the transport: \(error)", status: .checkFailed
            ).print(command: "sync", json: options.json)
        }
        let context = SyncContext(
            store: store, transport: transport, platform: "linux", appVersion: options.appVersion,
            pageLimit: options.pageLimit)
        let cycle = SyncCycle(context: context, delay: Self.sleep, events: output.event)
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

    /// Real waiting between retries (the engine core only asks for it).
    @Sendable private static func sleep(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        Thread.sleep(forTimeInterval: Double(seconds) + Double(attoseconds) / 1e18)
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

/// Progress and results: progress lines on standard error when it is a terminal (every event with `--verbose`,
/// also with `--json`), JSON Lines events on standard output with `--json`, the summary on standard output
/// unless quiet. Nothing printed carries a token, cursor or row value.
struct SyncOutput: Sendable {
    let json: Bool
    let progress: Bool
    let console: Console

    init(json: Bool, console: Console) {
        self.json = json
        self.console = console
        progress = !json && console.drawsProgress
    }

    var event: @Sendable (SyncEvent) -> Void {
        let (json, progress, console) = (json, progress, console)
        return { event in
            if json { Self.line(Self.object(event)) }
            if console.isVerbose {
                console.detail(Self.text(event))
            } else if progress {
                Terminal.err("sync: \(Self.text(event))\n")
            }
        }
    }

    func summary(_ summary: SyncSummary) {
        console.detail("cycle: \(PipelineText.requests(summary)), \(summary.retries) retries")
        guard json else {
            for left in summary.replacedClientIDs {
                console.info("client ID \(left) was left: the server had registered it from a first connect whose "
                    + "answer never arrived; the store now has a new client ID (seedkit inspect)\n")
            }
            console.info("synced: \(summary.rowsApplied) rows, \(summary.scopesVerified.count) scopes verified, "
                + "\(summary.mutationsPushed) mutations pushed\n")
            return
        }
        Self.line([
            "event": .string("summary"),
            "requests": .object(JSONObject([
                "connect": Self.number(summary.connectRequests), "push": Self.number(summary.pushRequests),
                "pull": Self.number(summary.pullRequests), "rebuild": Self.number(summary.rebuildRequests),
            ])),
            "rows_applied": Self.number(summary.rowsApplied),
            "scopes_verified": .array(summary.scopesVerified.map(JSONValue.string)),
            "scopes_rebuilt": .array(summary.scopesRebuilt.map(JSONValue.string)),
            "mutations": .object(JSONObject([
                "pushed": Self.number(summary.mutationsPushed), "accepted": Self.number(summary.mutationsAccepted),
                "rejected": Self.number(summary.mutationsRejected),
            ])),
            "retries": Self.number(summary.retries),
            "replaced_client_ids": .array(summary.replacedClientIDs.map(JSONValue.string)),
        ])
    }

    /// Prints a failed cycle; `nextAttempt` (Unix epoch milliseconds) is the stored backoff deadline after retries
    /// ran out, said in words and as `next_attempt_at_ms`.
    func failure(_ error: SyncCycleError, status: ExitStatus, nextAttempt: Int64? = nil, now: Int64 = 0) {
        var hint = ""
        var members = [
            JSONMember("event", .string("error")), JSONMember("message", .string(error.description)),
            JSONMember("code", .string(error.code)), JSONMember("retryable", .bool(error.isRetryable)),
            JSONMember("rule", .string(error.code)),
            JSONMember("exit_status", .number(JSONNumber(Int64(status.rawValue)))),
        ]
        if let nextAttempt {
            members.append(JSONMember("next_attempt_at_ms", .number(JSONNumber(nextAttempt))))
            hint = "seedkit: backoff stored: the next attempt is allowed at \(Self.instant(nextAttempt)) "
                + "(in \(Self.secondsUntil(nextAttempt, from: now)) s); a run before then waits for it "
                + "when it is at most an hour away, else sends nothing and exits 4\n"
        }
        if case .blocked(let operation, let code, let recoveryAction) = error {
            // A stored blocking error: name it so CI can act on it without parsing the message.
            let recovery = Self.recovery(code: code, action: recoveryAction)
            members.append(JSONMember("blocked", .object(JSONObject([
                "operation": .string(operation), "code": .string(code), "recovery_action": .string(recoveryAction),
                "meaning": .string(Self.meaning(code: code)), "recovery": .string(recovery),
            ]))))
            hint = "seedkit: \(code): \(Self.meaning(code: code))\nseedkit: recovery: \(recovery)\n"
        }
        if json, let bytes = try? CanonicalJSON.encode(.object(JSONObject(members))) {
            Terminal.out(bytes: bytes + [UInt8(ascii: "\n")])
        }
        Terminal.err("seedkit: \(FailureReport.text("sync failed: \(error)", rule: error.code))\n\(hint)")
    }

    /// What a stored blocking error's code means (the engine's dispatch table, else the local causes it records).
    static func meaning(code: String) -> String {
        if let refusal = SyncRefusal.named(code) { return refusal.meaning }
        switch code {
        case "incompatible_schema_transition", "unknown_schema_lineage":
            return "the server does not support the schema installed in this store"
        default:
            return "the engine stopped on a non-retryable failure it stored"
        }
    }

    /// The one command that recovers, or why none exists (docs/cli.md, "Stored refusals").
    static func recovery(code: String, action: String) -> String {
        switch (action, code) {
        case ("schema_reset", _):
            return "after upgrading the client: seedkit sync --schema-reset (same --server, --db and credential)"
        case ("retry", "upgrade_required"):
            return "upgrade the client (a newer --app-version), then: seedkit sync --retry-after-error"
        case ("retry", "auth_required"):
            return "with a valid credential: seedkit sync --retry-after-error"
        case ("retry", _):
            return "once the cause is remedied: seedkit sync --retry-after-error"
        case (_, "client_retired"):
            return "none for this store: a retired identity is never reused; sync a new store (another --db)"
        case (_, "idempotency_conflict"):
            return "none: the sealed request is kept for inspection (seedkit inspect) and is never sent again"
        default:
            return "none: the contract defines no recovery for this failure"
        }
    }

    private static func text(_ event: SyncEvent) -> String {
        switch event {
        case .phaseStarted(let phase): "\(phase.rawValue) started"
        case .phaseFinished(let phase): "\(phase.rawValue) finished"
        case .pageApplied(let phase, let scope, let rows):
            "\(phase.rawValue)\(scope.map { " \($0)" } ?? ""): \(rows) \(phase == .push ? "mutations" : "rows")"
        case .scopeVerified(let scope): "\(scope) verified"
        case .retryScheduled(let phase, let attempt, let status, let delay):
            "\(phase.rawValue) attempt \(attempt) failed (\(status.map { "HTTP \($0)" } ?? "no response")), "
                + "retrying in \(milliseconds(delay)) ms"
        case .schemaApplied(let action): "schema action \(action) applied"
        case .clientIdentityReplaced(let left, let current):
            "client ID \(left) refused as registered without this store; connecting as \(current)"
        case .mutationAccepted(let id): "mutation \(id) accepted"
        case .mutationRejected(let id, let code): "mutation \(id) rejected (\(code))"
        case .rebuildRequested(let scope): "rebuild of \(scope) requested"
        case .rebuildCompleted(let scope): "rebuild of \(scope) completed"
        case .stateChanged(let state): "state \(state.rawValue)"
        case .failed(let error): "failed: \(error)"
        }
    }

    private static func object(_ event: SyncEvent) -> KeyValuePairs<String, JSONValue> {
        switch event {
        case .phaseStarted(let phase): ["event": .string("phase_started"), "phase": .string(phase.rawValue)]
        case .phaseFinished(let phase): ["event": .string("phase_finished"), "phase": .string(phase.rawValue)]
        case .pageApplied(let phase, let scope, let rows):
            [
                "event": .string("page_applied"), "phase": .string(phase.rawValue),
                "scope": scope.map(JSONValue.string) ?? .null, "rows": number(rows),
            ]
        case .scopeVerified(let scope): ["event": .string("scope_verified"), "scope": .string(scope)]
        case .retryScheduled(let phase, let attempt, let status, let delay):
            [
                "event": .string("retry_scheduled"), "phase": .string(phase.rawValue), "attempt": number(attempt),
                "status": status.map(number) ?? .null, "delay_ms": .number(JSONNumber(milliseconds(delay))),
            ]
        case .schemaApplied(let action): ["event": .string("schema_applied"), "action": .string(action)]
        case .clientIdentityReplaced(let left, let current):
            ["event": .string("client_id_replaced"), "left": .string(left), "current": .string(current)]
        case .mutationAccepted(let id): ["event": .string("mutation_accepted"), "mutation_id": .string(id)]
        case .mutationRejected(let id, let code):
            ["event": .string("mutation_rejected"), "mutation_id": .string(id), "code": .string(code)]
        case .rebuildRequested(let scope): ["event": .string("rebuild_requested"), "scope": .string(scope)]
        case .rebuildCompleted(let scope): ["event": .string("rebuild_completed"), "scope": .string(scope)]
        case .stateChanged(let state): ["event": .string("state_changed"), "state": .string(state.rawValue)]
        case .failed(let error): ["event": .string("failed"), "message": .string(error.description)]
        }
    }

    private static func line(_ members: KeyValuePairs<String, JSONValue>) {
        // Canonical JSON of counts, names and phases cannot fail; a failure would only drop one event line.
        guard let bytes = try? CanonicalJSON.encode(.object(JSONObject(members))) else { return }
        Terminal.out(bytes: bytes + [UInt8(ascii: "\n")])
    }

    /// `2024-03-01T12:00:00Z` for Unix epoch milliseconds.
    private static func instant(_ milliseconds: Int64) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = TimeZone(identifier: "UTC")
        return formatter.string(from: Date(timeIntervalSince1970: Double(milliseconds) / 1000))
    }

    /// Whole seconds from `now` until `deadline`, rounded up (both Unix epoch milliseconds).
    private static func secondsUntil(_ deadline: Int64, from now: Int64) -> Int64 {
        let (left, overflow) = deadline.subtractingReportingOverflow(now)
        guard !overflow else { return Int64.max / 1000 }
        return left <= 0 ? 0 : left / 1000 + (left % 1000 > 0 ? 1 : 0)
    }

    private static func number(_ value: Int) -> JSONValue {
        .number(JSONNumber(Int64(value)))
    }

    private static func milliseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
