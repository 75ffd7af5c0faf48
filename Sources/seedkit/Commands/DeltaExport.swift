import Foundation
import SeedSources
import SynchroProtocol
import SystemKit

/// `seedkit export --source delta:FILE.json --out FILE` (docs/delta-sources.md): a warm-start seed from a
/// delta-sync API described by a definition file. The bearer token is read from the variable the definition names
/// (`auth.bearer_env`), never from the command line, and never printed; `--token-env`, `--scopes` and
/// `--page-limit` belong to Synchro sources and are refused here. As for Synchro exports, one export writes a
/// destination at a time (the advisory lock `.<out name>.lock`, `--wait SECONDS`) and SIGINT/SIGTERM end the run
/// before its next request: exit 130, nothing published, the temporary seed removed.
enum DeltaExport {
    static let prefix = "delta:"

    static func run(_ arguments: Arguments, definitionPath: String, output: String) throws(Arguments.UsageError)
        -> ExitStatus
    {
        for option in ["token-env", "scopes", "page-limit"] where arguments.values[option] != nil {
            throw Arguments.UsageError(message: "--\(option) does not apply to a delta source")
        }
        let json = arguments.flags.contains("json")
        let console = arguments.console("export")
        guard let (definition, token) = try loadDefinition(definitionPath, json: json) else { return .invalidInput }
        let wait = try ExportCommand.lockWait(arguments)
        Interruption.install()
        let lock: AdvisoryLock
        do {
            try? FileSystem.makeDirectory(FileSystem.split(output).directory, intermediate: true)
            lock = try AdvisoryLock(
                path: ExportCommand.lockPath(output), wait: wait, shouldStop: { Interruption.requested })
        } catch {
            switch error {
            case .held(_, let holder) where !Interruption.requested:
                let holderText = holder.map { "process \($0)" } ?? "another export"
                return report(
                    rule: "locked", message: "\(output) is locked by \(holderText) (locked): one export writes a "
                        + "destination at a time; run again once it has finished, or pass --wait SECONDS",
                    status: .locked, json: json)
            case .held:
                return report(
                    rule: "interrupted", message: "interrupted; nothing published", status: .interrupted, json: json)
            case .unavailable(let failure):
                return report(rule: "io_failed", message: failure.description, status: .checkFailed, json: json)
            }
        }
        defer { withExtendedLifetime(lock) {} }
        console.detail("source \(Console.displayURL(definition.baseURL)), \(definition.entities.count) entity type(s)"
            + (definition.bearerEnvironmentVariable.map { ", bearer credential from the variable \($0)" } ?? ""))
        do {
            let report = try DeltaExporter.export(
                definition: definition, bearerToken: token, to: output,
                options: NetworkOptions(arguments).delta(overwrite: arguments.flags.contains("force"))
            ) { event in
                switch event {
                case .reset(let entity):
                    console.detail("entity \(entity): the source asked for a reset; pulling from zero")
                case .entityDone(let entity, let rows): console.detail("entity \(entity): \(rows) rows")
                case .page: break
                }
            }
            try printResult(report, json: json, console: console)
            return .success
        } catch let error as DeltaSourceError {
            if error.rule == "interrupted" {
                return report(
                    rule: "interrupted", message: "interrupted; nothing published", status: .interrupted, json: json)
            }
            let status: ExitStatus = error.rule == "retries_exhausted"
                ? .retriesExhausted : error.isInputError ? .invalidInput : .checkFailed
            return report(error, status: status, json: json)
        } catch {
            Terminal.err("seedkit: export failed: \(error)\n")
            return .checkFailed
        }
    }

    /// The definition at `path` and the bearer token from the variable it names; nil after reporting a definition
    /// error (exit 2). Shared by `export`, `warm` and `rehearse` of delta sources.
    static func loadDefinition(_ path: String, json: Bool) throws(Arguments.UsageError)
        -> (DeltaSourceDefinition, String?)?
    {
        let definition: DeltaSourceDefinition
        do {
            guard let bytes = FileManager.default.contents(atPath: path) else {
                throw Arguments.UsageError(message: "cannot read the delta source definition \(path)")
            }
            definition = try DeltaSourceDefinition(bytes: Array(bytes))
        } catch let error as DeltaSourceError {
            report(error, status: .invalidInput, json: json)
            return nil
        } catch let error as Arguments.UsageError {
            throw error
        } catch {
            throw Arguments.UsageError(message: "\(error)")
        }
        var token: String?
        if let variable = definition.bearerEnvironmentVariable {
            guard let value = ProcessInfo.processInfo.environment[variable], !value.isEmpty else {
                throw Arguments.UsageError(message: "the environment variable \(variable) (auth.bearer_env) is not set")
            }
            token = value
        }
        return (definition, token)
    }

    private static func printResult(_ report: DeltaExportReport, json: Bool, console: Console) throws {
        if json {
            let bytes = FileManager.default.contents(atPath: report.evidencePath) ?? Data()
            let evidence = try StrictJSONParser().parse(Array(bytes))
            let object = JSONObject((evidence.objectValue?.members ?? []) + [
                JSONMember("evidence", .string(report.evidencePath)), JSONMember("path", .string(report.path)),
            ])
            Terminal.out(bytes: (try CanonicalJSON.encode(.object(object))) + [0x0A])
            return
        }
        var lines = ["exported \(report.entities.reduce(0) { $0 + $1.rows }) rows of \(report.entities.count) "
            + "entity type(s) to \(report.path) (\(report.bytes) bytes, \(report.milliseconds) ms)"]
        for entity in report.entities {
            var line = "  \(entity.name) → \(entity.table): \(entity.rows) rows, \(entity.pages) page(s)"
            if entity.resets > 0 { line += ", \(entity.resets) reset(s)" }
            if let sessions = entity.sessionsNeeded, sessions > 1 {
                line += ", an app would need \(sessions) sync sessions (max_pages_per_session)"
            }
            lines.append(line)
        }
        lines.append("evidence: \(report.evidencePath)")
        console.info(lines.joined(separator: "\n") + "\n")
    }

    @discardableResult
    static func report(_ error: DeltaSourceError, status: ExitStatus, json: Bool, command: String = "export")
        -> ExitStatus
    {
        report(rule: error.rule, message: error.description, status: status, json: json, prefix: "\(command) failed: ")
    }

    /// One failure of a delta command, through the one failure contract (``FailureReport``): the message and rule on
    /// standard error and, with `--json`, `{"error":{"exit_status","message","rule"}}` on standard output.
    @discardableResult
    static func report(rule: String, message: String, status: ExitStatus, json: Bool, prefix: String = "")
        -> ExitStatus
    {
        FailureReport(rule: rule, message: prefix + message, status: status).print(command: "export", json: json)
    }
}

extension NetworkOptions {
    /// The options of a delta run (export, warm, rehearse): `--retries`, `--timeout`, and SIGINT/SIGTERM checked
    /// before every request.
    func delta(overwrite: Bool = false) -> DeltaExportOptions {
        var options = DeltaExportOptions(
            overwrite: overwrite, maximumRetries: retries, sleep: NetworkOptions.sleep,
            isInterrupted: { Interruption.requested })
        options.timeout = timeout
        return options
    }
}
