import Foundation
import SeedArtifacts
import SeedPipeline
import SeedSources
import SynchroProtocol
import SystemKit

/// `seedkit export`: one portable seed from a server's operator export routes or from upstream's PostgreSQL export
/// functions (`--source postgresql://…`), verified, published
/// atomically, with `<out>.evidence.json` beside it (`spec/seed-format.md` §5). The library publishes the evidence
/// before the seed (`SeedExporter.exportWithEvidence`), so a seed at the output path always has its evidence.
///
/// The operator token is read from the environment variable named by `--token-env` (default
/// `SEEDKIT_OPERATOR_TOKEN`) or the file `--token-file` names, never from the command line, and never printed; a
/// PostgreSQL password comes from libpq (the connection string, `PGPASSWORD`, `~/.pgpass`) and is never printed.
enum ExportCommand {
    static let spec = CommandSpec(
        "export", "export a verified portable seed from a server, PostgreSQL or a delta-sync API",
        options: [
            .value("source", "URL", .text, "http(s)://HOST:PORT, postgresql://… (or key=value) or delta:FILE.json",
                   required: true),
            .value(
                "out", "FILE", .path, "the seed to publish; FILE.evidence.json is written beside it", required: true),
            .secretVariable(
                "token", "HTTP source: the variable holding the operator token", default: "SEEDKIT_OPERATOR_TOKEN"),
            .secretFile("token", "HTTP source: the file holding the operator token, instead of a variable"),
            .value(
                "scopes", "A,B", .text, "only these scopes, each in the portable set", default: "every portable scope"),
            .value("page-limit", "N", .integer(1...1000), "rows per page",
                   default: "\(SeedExportOptions().pageLimit)"),
            .value("wait", "SECONDS", .integer(0...86_400),
                   "when another export holds the destination, wait this long instead of failing with locked"),
            .force("replace an existing FILE atomically; without it an existing file is never touched"),
            .json("one canonical object: the evidence plus path and evidence"),
        ] + NetworkOptions.specs)

    static func run(_ words: [String]) throws(Arguments.UsageError) -> ExitStatus {
        let arguments = try Arguments(words, spec: spec)
        guard arguments.positionals.isEmpty else {
            throw Arguments.UsageError(message: "export takes no positional arguments")
        }
        if let source = arguments.values["source"], source.hasPrefix(DeltaExport.prefix) {
            guard let output = arguments.values["out"], !output.isEmpty else {
                throw Arguments.UsageError(message: "export needs --out FILE")
            }
            return try DeltaExport.run(
                arguments, definitionPath: String(source.dropFirst(DeltaExport.prefix.count)), output: output)
        }
        guard let source = arguments.values["source"], let kind = SourceKind(source) else {
            throw Arguments.UsageError(
                message: "export needs --source http(s)://HOST:PORT, postgresql://USER@HOST[:PORT]/DB or "
                    + "delta:FILE.json")
        }
        guard let output = arguments.values["out"], !output.isEmpty else {
            throw Arguments.UsageError(message: "export needs --out FILE")
        }
        // The operator token is the HTTP source's credential; PostgreSQL authenticates through libpq.
        let secret = kind == .postgresql
            ? nil : try SecretInput.read(arguments, option: "token")
        guard kind == .postgresql || secret != nil else {
            throw Arguments.UsageError(
                message: "the operator token is needed: the variable SEEDKIT_OPERATOR_TOKEN, --token-env VAR or "
                    + "--token-file FILE", rule: "credential_missing")
        }
        let options = try exportOptions(arguments)
        let wait = try lockWait(arguments)
        let json = arguments.flags.contains("json")
        let console = arguments.console("export")
        let network = NetworkOptions(arguments).settings(command: "export", json: json, console: console)
        // One export per destination at a time (`.<out name>.lock` beside it), and SIGINT/SIGTERM end it at the next
        // page.
        Interruption.install()
        let lock: AdvisoryLock
        do {
            // The exporter creates a missing parent directory; the lock file needs it first.
            try? FileSystem.makeDirectory(FileSystem.split(output).directory, intermediate: true)
            lock = try AdvisoryLock(path: lockPath(output), wait: wait, shouldStop: { Interruption.requested })
        } catch {
            switch error {
            case .held(_, let holder) where !Interruption.requested:
                let holderText = holder.map { "process \($0)" } ?? "another export"
                report(rule: "locked", message: "\(output) is locked by \(holderText) "
                    + "(locked): one export writes a destination at a time; run again once it has finished, or pass "
                    + "--wait SECONDS", status: .locked, json: json)
                return .locked
            case .held:
                report(rule: "interrupted", message: "interrupted; nothing published", status: .interrupted, json: json)
                return .interrupted
            case .unavailable(let failure):
                report(rule: "io_failed", message: failure.description, status: .checkFailed, json: json)
                return .checkFailed
            }
        }
        defer { withExtendedLifetime(lock) {} }
        let display = ExportDisplay(console: console, progress: !json)
        do {
            let (evidence, evidencePath): (SeedEvidence, String)
            switch (kind, secret) {
            case (.http, let secret?):
                console.detail("source \(Console.displayURL(source)), operator credential from \(secret.source), "
                    + "page limit \(options.pageLimit)")
                let exportSource = InterruptibleExportSource(
                    base: try HTTPExportSource(
                        baseURL: source, operatorToken: secret.value, timeout: network.timeout,
                        retry: network.retryPolicy),
                    isInterrupted: { Interruption.requested })
                (evidence, evidencePath) = try SeedExporter.exportWithEvidence(
                    from: exportSource, to: output, options: options
                ) { event in
                    display.show(event)
                }
            default:
                (evidence, evidencePath) = try exportFromPostgreSQL(
                    source, to: output, options: options, console: console, display: display)
            }
            display.finish()
            try printResult(evidence, path: output, evidencePath: evidencePath, json: json, console: console)
            return .success
        } catch let error as SeedExportError {
            display.finish()
            if case .interrupted = error {
                report(rule: "interrupted", message: "interrupted; nothing published", status: .interrupted, json: json)
                return .interrupted
            }
            var status: ExitStatus = error.isInputError ? .invalidInput : .checkFailed
            if case .database(_, .retriesExhausted) = error { status = .retriesExhausted }
            if case .transport(_, _, _, true) = error { status = .retriesExhausted }
            var message = "export failed: \(error)"
            if case .refused(_, let code, _) = error, code == 401 || code == 403, let secret {
                message += "; the server refused the operator token from \(secret.source): fix it there"
            }
            report(rule: error.rule, message: message, status: status, json: json)
            return status
        } catch {
            display.finish()
            Terminal.err("seedkit: export failed: \(error)\n")
            return .checkFailed
        }
    }

    /// Where `--source` points: the reference server's operator routes, upstream's functions in PostgreSQL
    /// (a libpq URI or `key=value` list; the connection string is never printed, only the target libpq reports),
    /// or a delta-sync API described by a definition file (`delta:FILE.json`, ``DeltaExport``).
    enum SourceKind {
        case http, postgresql

        init?(_ source: String) {
            if source.hasPrefix("http://") || source.hasPrefix("https://") {
                self = .http
            } else if source.hasPrefix("postgresql://") || source.hasPrefix("postgres://") || source.contains("=") {
                self = .postgresql
            } else {
                return nil
            }
        }
    }

    /// One export inside one `SERIALIZABLE READ ONLY DEFERRABLE` transaction, run again after a serialization
    /// failure (the default ``SerializationRetryPolicy``).
    private static func exportFromPostgreSQL(
        _ connectionString: String, to output: String, options: SeedExportOptions, console: Console,
        display: ExportDisplay
    ) throws(SeedExportError) -> (SeedEvidence, String) {
        let source = try PostgresExportSource(connectionString: connectionString)
        console.detail("source PostgreSQL at \(source.target), page limit \(options.pageLimit)")
        return try source.withRetries(sleep: { delay in
            console.detail("serialization failure: the export transaction runs again in \(delay)")
            SerializationRetryPolicy.sleep(delay)
        }) { (source) throws(SeedExportError) in
            let interruptible = InterruptibleExportSource(base: source, isInterrupted: { Interruption.requested })
            return try SeedExporter.exportWithEvidence(from: interruptible, to: output, options: options) { event in
                display.show(event)
            }
        }
    }

    /// The destination's lock file: hidden, beside it, like the export's own temporaries.
    static func lockPath(_ output: String) -> String {
        let url = URL(fileURLWithPath: output)
        return url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).lock").path
    }

    /// `--wait SECONDS`: how long to wait for another export holding the destination.
    private static func lockWait(_ arguments: Arguments) throws(Arguments.UsageError) -> Duration? {
        arguments.integer("wait").map { .seconds($0) }
    }

    /// `--page-limit`, `--scopes` and `--force`.
    private static func exportOptions(_ arguments: Arguments) throws(Arguments.UsageError) -> SeedExportOptions {
        var options = SeedExportOptions(overwrite: arguments.flags.contains("force"))
        if let limit = arguments.integer("page-limit") { options.pageLimit = limit }
        if let list = arguments.values["scopes"] {
            let scopes = list.split(separator: ",").map(String.init)
            guard !scopes.isEmpty, scopes.allSatisfy({ !$0.isEmpty }) else {
                throw Arguments.UsageError(message: "--scopes needs a comma-separated list of scope IDs")
            }
            options.scopes = scopes
        }
        return options
    }

    /// The evidence with `path` and `evidence` as one JSON line, or the summary unless quiet.
    private static func printResult(
        _ evidence: SeedEvidence, path: String, evidencePath: String, json: Bool, console: Console
    ) throws {
        if json {
            let object = JSONObject((evidence.json.objectValue?.members ?? []) + [
                JSONMember("path", .string(path)), JSONMember("evidence", .string(evidencePath)),
            ])
            Terminal.out(bytes: (try CanonicalJSON.encode(.object(object))) + [0x0A])
            return
        }
        let report = evidence.export
        let rate = report.seconds > 0 ? Double(report.rows) / report.seconds : 0
        console.info("""
            exported \(report.rows) rows in \(report.scopes.count) portable scope(s) to \(path) \
            (\(report.bytes) bytes, \(String(format: "%.2f", report.seconds)) s, \(Int(rate)) rows/s)
            evidence: \(evidencePath)

            """)
    }

    /// The failure as `{"error":{"rule","message","exit_status"}}` on standard output with `--json`, else on standard
    /// error with its rule.
    private static func report(rule: String, message: String, status: ExitStatus, json: Bool) {
        if json {
            let object = JSONValue.object(JSONObject([
                JSONMember("error", .object(JSONObject([
                    JSONMember("rule", .string(rule)), JSONMember("message", .string(message)),
                    JSONMember("exit_status", .number(JSONNumber(Int64(status.rawValue)))),
                ])))
            ]))
            Terminal.out(bytes: ((try? CanonicalJSON.encode(object)) ?? []) + [0x0A])
        } else {
            Terminal.err("seedkit: \(message)\(message.contains("(\(rule))") ? "" : " (\(rule))")\n")
        }
    }
}

extension SeedExportError {
    /// Usage-like failures (exit 2): the output path or the source URL, not what the source sent.
    var isInputError: Bool {
        switch self {
        case .invalidSource, .output, .scopeNotPortable: true
        default: false
        }
    }
}

/// What an export shows while it runs: a one-line progress display on standard error when it is a terminal
/// (not when quiet or with `--json`), and with `--verbose` a detail line per scope as it completes.
final class ExportDisplay: @unchecked Sendable {
    private let console: Console
    private let enabled: Bool
    private var total: Int64 = 0
    private var done: Int64 = 0
    private let started = ContinuousClock.now
    private var lastDraw = ContinuousClock.now
    /// When the first publication finished; the seed's publication is timed from it.
    private var publishing: ContinuousClock.Instant?
    /// The scope whose pages are arriving, its rows so far and when its first page arrived.
    private var scope: (id: String, rows: Int64, started: ContinuousClock.Instant)?

    init(console: Console, progress: Bool) {
        self.console = console
        enabled = progress && console.drawsProgress
    }

    func show(_ event: SeedExportEvent) {
        switch event {
        case .started(let scopes):
            total = scopes.reduce(0) { $0 + $1.cardinality }
            console.detail("export manifest: \(scopes.count) portable scope(s), \(total) rows")
        case .rows(let id, let rows):
            if scope?.id != id {
                finishScope()
                scope = (id, 0, .now)
            }
            scope?.rows += rows
            done += rows
        case .verifying:
            finishScope()
            console.detail("verifying the finished file (every publication and installer check)")
            if enabled { Terminal.progress("\r\u{1B}[Kverifying…") }
            return
        case .evidencePublished(let path):
            console.detail("evidence published: \(path)")
            publishing = .now
            return
        case .published(let path):
            console.detail("seed published: \(path)", since: publishing ?? started)
            return
        }
        draw()
    }

    func finish() {
        if enabled { Terminal.progress("\r\u{1B}[K") }
    }

    private func finishScope() {
        guard let scope else { return }
        console.detail("scope \(scope.id): \(scope.rows) rows checked and written", since: scope.started)
        self.scope = nil
    }

    private func draw() {
        guard enabled else { return }
        let now = ContinuousClock.now
        guard now - lastDraw > .milliseconds(100) || done == total else { return }
        lastDraw = now
        let elapsed = now - started
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let rate = seconds > 0 ? Double(done) / seconds : 0
        let percent = total > 0 ? Int(Double(done) * 100 / Double(total)) : 100
        let remaining = rate > 0 ? Int(Double(total - done) / rate) : 0
        Terminal.progress(
            "\r\u{1B}[Kexport \(percent)%  \(done)/\(total) rows  \(Int(rate)) rows/s  ~\(remaining)s left")
    }
}
