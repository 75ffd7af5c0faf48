import Foundation
import SynchroClient
import SynchroHTTP
import SynchroProtocol

/// `seedkit sync`: one complete sync cycle of a client store against a protocol 3 server
/// (ARCHITECTURE.md, "Headless sync").
///
/// The store at `--db` is created on first use; its client ID is the one the store is bound to, else
/// `--client-id`, else a new UUID. The bearer secret may come from `SEEDKIT_TOKEN` instead of the command
/// line, where other users of the machine could read it; it is never printed.
enum SyncCommand {
    static func run(_ words: [String]) throws(Arguments.UsageError) -> ExitStatus {
        let arguments = try Arguments(
            words, flags: ["json"], valued: ["server", "db", "token", "client-id", "app-version", "page-limit"])
        // Not `requirePositionals`: its message echoes the word, which could be a misplaced secret.
        guard arguments.positionals.isEmpty else {
            throw Arguments.UsageError(message: "sync takes no positional arguments")
        }
        guard let server = arguments.values["server"] else {
            throw Arguments.UsageError(message: "sync needs --server URL")
        }
        guard server.hasPrefix("http://") || server.hasPrefix("https://") else {
            throw Arguments.UsageError(message: "--server needs an http:// or https:// URL")
        }
        guard let path = arguments.values["db"], !path.isEmpty else {
            throw Arguments.UsageError(message: "sync needs --db FILE")
        }
        guard let token = arguments.values["token"] ?? ProcessInfo.processInfo.environment["SEEDKIT_TOKEN"],
              !token.isEmpty
        else {
            throw Arguments.UsageError(message: "sync needs --token SECRET (or SEEDKIT_TOKEN)")
        }
        let appVersion = arguments.values["app-version"] ?? "1.0.0"
        guard SemanticVersion(appVersion) != nil else {
            throw Arguments.UsageError(message: "--app-version needs a SemVer version")
        }
        var pageLimit: Int64 = 100
        if let text = arguments.values["page-limit"] {
            guard let limit = Int64(text), (1...1000).contains(limit) else {
                throw Arguments.UsageError(message: "--page-limit needs a count in 1…1000")
            }
            pageLimit = limit
        }
        let output = Output(json: arguments.flags.contains("json"))

        let store: ClientStore
        do {
            store = try openStore(path: path, clientID: arguments.values["client-id"])
        } catch let error as StoreOpenError {
            Terminal.err("seedkit: \(error.message)\n")
            return error.isUsage ? .invalidInput : .checkFailed
        } catch {
            Terminal.err("seedkit: cannot open the client store: \(error)\n")
            return .checkFailed
        }
        defer { store.close() }
        let transport: CurlSyncTransport
        do {
            transport = CurlSyncTransport(
                curl: try CurlTransport(configuration: .init(baseURL: server)), credential: token,
                appVersion: appVersion)
        } catch {
            Terminal.err("seedkit: cannot set up the transport: \(error)\n")
            return .checkFailed
        }
        let context = SyncContext(
            store: store, transport: transport, platform: "linux", appVersion: appVersion, pageLimit: pageLimit)
        let cycle = SyncCycle(context: context, delay: Self.sleep, events: output.event)
        do {
            output.summary(try cycle.run())
            return .success
        } catch {
            output.failure(error)
            return .checkFailed
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
    /// uses `--client-id` or a new UUID, which the first successful connect persists.
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
        store.close()
        if requested != nil {
            throw StoreOpenError(message: "the store is bound to another client ID than --client-id", isUsage: true)
        }
        return try ClientStore(configuration: ClientStoreConfiguration(path: path, clientID: bound))
    }
}

/// `CurlTransport` adapted to the engine's transport: every exchange is a protocol POST with the bearer
/// credential and `X-App-Version`.
private struct CurlSyncTransport: SyncTransport {
    let curl: CurlTransport
    let credential: String
    let appVersion: String

    func post(path: String, body: [UInt8]) throws -> SyncReply {
        let response = try curl.send(
            .protocolPost(path: path, body: body, credential: credential, appVersion: appVersion))
        return SyncReply(
            status: response.status, headers: response.headers.map { (name: $0.name, value: $0.value) },
            body: response.body)
    }
}

/// Progress and results: progress lines on standard error when it is a terminal, or JSON Lines events on
/// standard output with `--json`. Nothing printed carries a token, cursor or row value.
private struct Output: Sendable {
    let json: Bool
    let progress: Bool

    init(json: Bool) {
        self.json = json
        progress = !json && isatty(STDERR_FILENO) == 1
    }

    var event: @Sendable (SyncEvent) -> Void {
        let (json, progress) = (json, progress)
        return { event in
            if json {
                Self.line(Self.object(event))
            } else if progress {
                Terminal.err("sync: \(Self.text(event))\n")
            }
        }
    }

    func summary(_ summary: SyncSummary) {
        guard json else {
            Terminal.out("synced: \(summary.rowsApplied) rows, \(summary.scopesVerified.count) scopes verified, "
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
        ])
    }

    func failure(_ error: SyncCycleError) {
        if json {
            Self.line(["event": .string("error"), "message": .string(error.description)])
        }
        Terminal.err("seedkit: sync failed: \(error)\n")
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
        }
    }

    private static func line(_ members: KeyValuePairs<String, JSONValue>) {
        // Canonical JSON of counts, names and phases cannot fail; a failure would only drop one event line.
        guard let bytes = try? CanonicalJSON.encode(.object(JSONObject(members))) else { return }
        Terminal.out(bytes: bytes + [UInt8(ascii: "\n")])
    }

    private static func number(_ value: Int) -> JSONValue {
        .number(JSONNumber(Int64(value)))
    }

    private static func milliseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
