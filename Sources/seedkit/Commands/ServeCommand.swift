import Dispatch
import Foundation
import SynchroProtocol
import SynchroServer
import SystemKit

/// `seedkit serve`: the reference protocol 3 server on loopback, until SIGINT or SIGTERM.
///
/// Secrets never come from the command line (where other users of the machine could read them): user credentials
/// from `--token-file FILE` (one `USER=SECRET` per line) or `SEEDKIT_TOKENS="alice=secret1,bob=secret2"`, the
/// operator token from `SEEDKIT_OPERATOR_TOKEN`, `--operator-token-env VAR` or `--operator-token-file FILE`.
enum ServeCommand {
    static let spec = CommandSpec(
        "serve", "run the reference protocol 3 server until SIGINT or SIGTERM",
        options: [
            .value("dataset", "DIR", .path, "the dataset directory: manifest and generated rows", required: true),
            .value("rows", "N", .integer(0...Int64.max), "rows to generate, instead of the dataset's own count"),
            .value("listen", "HOST:PORT", .text, "the address to listen on; port 0 picks a free port",
                   default: "127.0.0.1:0"),
            .value("db", "FILE", .path, "the server's SQLite database, kept; default a private temporary one"),
            .value("store", "CONNINFO", .text, "a PostgreSQL store instead of SQLite (postgresql://… or key=value)"),
            OptionSpec.secretFile("token", "user credentials, one USER=SECRET per line").supplied(by: "SEEDKIT_TOKENS"),
            .secretVariable(
                "operator-token", "the variable holding the operator token (enables the operator routes)",
                default: "SEEDKIT_OPERATOR_TOKEN"),
            .secretFile("operator-token", "the file holding the operator token"),
            .value("min-client-version", "V", .version, "refuse clients older than this with upgrade_required"),
            .value("materialization-lag", "MS", .integer(0...Int64.max),
                   "materialize changes in the background every MS milliseconds; 0 at once", default: "0"),
            DeltaServeCommand.protocolOption,
            DeltaServeCommand.entitiesOption,
        ])

    static func run(_ words: [String]) throws(Arguments.UsageError) -> ExitStatus {
        // `--protocol delta`: the reference delta-sync server instead (``DeltaServeCommand``).
        if words.contains("--protocol") { return try DeltaServeCommand.run(words) }
        let arguments = try Arguments(words, spec: spec)
        if arguments.values["entities"] != nil {
            throw Arguments.UsageError(message: "--entities needs --protocol delta")
        }
        try arguments.requirePositionals(atMost: 0)
        let datasetPath = arguments.values["dataset"] ?? ""
        let (host, port) = try listenAddress(arguments.value("listen") ?? "")
        let rows = arguments.integer("rows").map { Int($0) }
        let environment = ProcessInfo.processInfo.environment
        var pairs = environment["SEEDKIT_TOKENS"].map(splitList) ?? []
        if let file = arguments.values["token-file"] {
            pairs += try SecretInput.file(file, option: "--token-file").value
                .split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
                .filter { !$0.isEmpty && !$0.hasPrefix("#") }
        }
        let credentials = try credentials(pairs)
        guard !credentials.isEmpty else {
            throw Arguments.UsageError(
                message: "serve needs user credentials: --token-file FILE (USER=SECRET lines) or SEEDKIT_TOKENS",
                rule: "credential_missing")
        }
        let operatorToken = try SecretInput.read(arguments, option: "operator-token")
        let minimum = arguments.values["min-client-version"].flatMap(SemanticVersion.init)

        var materialization = MaterializationMode.immediate
        if let milliseconds = arguments.integer("materialization-lag"), milliseconds > 0 {
            materialization = .background(interval: .milliseconds(milliseconds))
        }

        let dataset: Dataset
        do {
            dataset = try Dataset(directory: URL(fileURLWithPath: datasetPath))
        } catch {
            Terminal.err("seedkit: invalid dataset: \(error)\n")
            return .invalidInput
        }
        let postgresStore = arguments.values["store"]
        if let postgresStore {
            guard arguments.values["db"] == nil else { throw Arguments.UsageError(message: "serve takes --db or --store, not both") }
            guard postgresStore.hasPrefix("postgresql://") || postgresStore.hasPrefix("postgres://")
                || postgresStore.contains("=")
            else { throw Arguments.UsageError(message: "--store needs a PostgreSQL connection string (postgresql://… or key=value)") }
        }
        // Without --db or --store the database lives in a private directory (0700, the file 0600) removed when serve exits:
        // it holds the server's HMAC keys and every row.
        guard let scratch = privateScratch(needed: arguments.values["db"] == nil && postgresStore == nil,
                                           prefix: "seedkit-serve") else { return .checkFailed }
        defer { if let scratch { FileSystem.removeTree(scratch) } }
        let databasePath = arguments.values["db"] ?? scratch.map { $0 + "/server.db" } ?? ""
        var configuration = ServerConfiguration(
            dataset: dataset, rowsOverride: rows, databasePath: databasePath, credentials: credentials,
            operatorToken: operatorToken?.value,
            minimumClientVersion: minimum, materialization: materialization)
        configuration.postgresStore = postgresStore
        let console = arguments.console("serve")
        console.detail("dataset \(datasetPath)\(rows.map { ", \($0) rows" } ?? "")")
        // A connection string may carry a password: only the kind of store is printed.
        console.detail(postgresStore == nil ? "database \(databasePath)" : "database PostgreSQL (--store)")
        console.detail("\(credentials.count) user credential(s), operator routes "
            + (configuration.operatorToken == nil ? "disabled" : "enabled"))
        if let minimum { console.detail("minimum client version \(minimum)") }
        if case .background(let interval) = materialization { console.detail("materialization lag \(interval)") }
        return serve(configuration, host: host, port: port, console: console)
    }

    private static func serve(
        _ configuration: ServerConfiguration, host: String, port: UInt16, console: Console
    ) -> ExitStatus {
        let engine: SyncEngine
        do {
            engine = try SyncEngine(configuration: configuration)
        } catch {
            Terminal.err("seedkit: cannot open the server database: \(error)\n")
            return .checkFailed
        }
        // SIGINT and SIGTERM are taken over before the address is printed: a caller that reads the address and
        // stops the server at once must not find the signal ignored before its handler is in place.
        let stop = DispatchSemaphore(value: 0)
        var sources: [any DispatchSourceSignal] = []
        for signalNumber in [SIGINT, SIGTERM] {
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
            source.setEventHandler { stop.signal() }
            source.resume()
            sources.append(source)
        }
        let handler: any HTTPHandler = console.isVerbose ? logging(engine, console) : engine
        var configuration = HTTPServer.Configuration()
        configuration.maximumConnectionsPerAddress = HTTPServer.Configuration.servePerAddressLimit
        let server = HTTPServer(configuration: configuration, handler: handler)
        let bound: UInt16
        do {
            bound = try server.start(host: host, port: port)
        } catch {
            return FailureReport(rule: "listen_failed", message: "cannot listen on \(host):\(port): \(error)",
                                 status: .checkFailed).print(command: "serve", json: false)
        }
        // The address is what a caller of `--listen HOST:0` needs, so it prints even when quiet.
        console.result("listening on http://\(host):\(bound)\n")
        stop.wait()
        console.detail("stopping: waiting for requests in progress")
        server.stop()
        engine.shutdown()
        sources.forEach { $0.cancel() }
        console.notice("seedkit: server stopped\n")
        return .success
    }

    /// One detail line per request: method, path (never the query, headers or body), status and time.
    private static func logging(_ engine: SyncEngine, _ console: Console) -> HTTPClosureHandler {
        HTTPClosureHandler { request in
            let start = ContinuousClock.now
            let response = engine.handle(request)
            console.detail("\(request.method) \(request.path) \(response.status)", since: start)
            return response
        }
    }

    static func listenAddress(_ text: String) throws(Arguments.UsageError) -> (String, UInt16) {
        guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]) else {
            throw Arguments.UsageError(message: "--listen needs HOST:PORT (port 0 picks a free port)")
        }
        return (String(text[..<colon]), port)
    }

    private static func splitList(_ text: String) -> [String] {
        text.split(separator: ",").map { String($0) }
    }

    /// `USER=SECRET` pairs → secret → user. The secret is never echoed in errors.
    private static func credentials(_ pairs: [String]) throws(Arguments.UsageError) -> [String: String] {
        var result: [String: String] = [:]
        for pair in pairs {
            guard let equals = pair.firstIndex(of: "="), equals != pair.startIndex,
                  pair.index(after: equals) != pair.endIndex
            else { throw Arguments.UsageError(message: "a user credential needs the form USER=SECRET") }
            let user = String(pair[..<equals])
            let secret = String(pair[pair.index(after: equals)...])
            guard result[secret] == nil else { throw Arguments.UsageError(message: "two users share one secret") }
            result[secret] = user
        }
        return result
    }

    /// The private temporary directory (0700, removed by the caller when serve exits) a server keeps its store in
    /// when none was named: `.some(nil)` when `needed` is false, `nil` after reporting why it could not be made.
    static func privateScratch(needed: Bool, prefix: String) -> String?? {
        guard needed else { return .some(nil) }
        do {
            return .some(try PrivateFiles.makeTemporaryDirectory(prefix: prefix))
        } catch {
            Terminal.err("seedkit: \(error)\n")
            return nil
        }
    }
}
