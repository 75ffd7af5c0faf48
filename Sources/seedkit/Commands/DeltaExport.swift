import Foundation
import SeedSources
import SynchroProtocol

/// `seedkit export --source delta:FILE.json --out FILE` (docs/delta-sources.md): a warm-start seed from a
/// delta-sync API described by a definition file. The bearer token is read from the variable the definition names
/// (`auth.bearer_env`), never from the command line, and never printed; `--token-env`, `--scopes` and
/// `--page-limit` belong to Synchro sources and are refused here.
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
        let definition: DeltaSourceDefinition
        do {
            guard let bytes = FileManager.default.contents(atPath: definitionPath) else {
                throw Arguments.UsageError(message: "cannot read the delta source definition \(definitionPath)")
            }
            definition = try DeltaSourceDefinition(bytes: Array(bytes))
        } catch let error as DeltaSourceError {
            report(error, json: json)
            return .invalidInput
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
        let network = NetworkOptions(arguments)
        console.detail("source \(Console.displayURL(definition.baseURL)), \(definition.entities.count) entity type(s)"
            + (definition.bearerEnvironmentVariable.map { ", bearer credential from the variable \($0)" } ?? ""))
        do {
            let report = try DeltaExporter.export(
                definition: definition, bearerToken: token, to: output,
                options: DeltaExportOptions(
                    overwrite: arguments.flags.contains("force"), maximumRetries: network.retries,
                    sleep: NetworkOptions.sleep)
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
            report(error, json: json)
            if error.rule == "retries_exhausted" { return .retriesExhausted }
            return error.isInputError ? .invalidInput : .checkFailed
        } catch {
            Terminal.err("seedkit: export failed: \(error)\n")
            return .checkFailed
        }
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

    private static func report(_ error: DeltaSourceError, json: Bool) {
        if json {
            let object = JSONValue.object(JSONObject([
                JSONMember("error", .object(JSONObject([
                    JSONMember("message", .string(error.description)), JSONMember("rule", .string(error.rule)),
                ])))
            ]))
            Terminal.out(bytes: ((try? CanonicalJSON.encode(object)) ?? []) + [0x0A])
        } else {
            Terminal.err("seedkit: export failed: \(error)\n")
        }
    }
}
