import Foundation
import SeedPipeline
import SeedSources
import SynchroProtocol
import SystemKit

/// The delta-seed forms of `install`, `rehearse` and `warm` (docs/delta-sources.md): `install` and `verify`
/// recognise a delta seed (packed or not) by its `_delta_seed` table and come here; `rehearse --source
/// delta:FILE.json` and `warm --source delta:FILE.json --db APP.db` pull from the API the definition describes, with
/// the bearer token from the variable it names.
enum DeltaCommands {
    /// `seedkit install DELTA-SEED --to APP.db`: verified, then published with `link()` (never replacing).
    static func install(seed: String, destination: String, json: Bool, console: Console) -> ExitStatus {
        do {
            let report = try DeltaSeedInstaller.install(seed: seed, to: destination)
            if json {
                let entities = report.entities.map { entity in
                    JSONValue.object(JSONObject([
                        JSONMember("entity", .string(entity.entity)), JSONMember("rows", .number(JSONNumber(entity.rows))),
                        JSONMember("table", .string(entity.table)),
                    ]))
                }
                output(JSONObject([
                    JSONMember("destination", .string(destination)), JSONMember("entities", .array(entities)),
                    JSONMember("kind", .string("delta")), JSONMember("ok", .bool(true)),
                ]))
            } else {
                let rows = report.entities.reduce(0) { $0 + $1.rows }
                console.info("ok: installed \(destination) (delta seed verified, \(report.entities.count) entity "
                    + "type(s), \(rows) rows)\n")
            }
            return .success
        } catch {
            let status: ExitStatus
            if case .rejected = error { status = .checkFailed } else { status = .invalidInput }
            return DeltaExport.report(
                rule: error.rule, message: error.description, status: status, json: json, prefix: "install failed: ")
        }
    }

    /// `rehearse` of a delta seed: `--source` replaces `--server` and its credential (the definition names both).
    static let rehearseSpec = CommandSpec(
        "rehearse", "a delta seed warmed from its checkpoints on a copy, compared with a full pull from zero",
        positionals: [PositionalSpec(placeholder: "DELTA-SEED.db[.zst]", help: "the delta seed, plain or packed")],
        options: [
            RehearseCommand.deltaSource.asRequired(),
            .json("one JSON report instead of text"),
        ] + NetworkOptions.specs)

    /// `seedkit rehearse DELTA-SEED --source delta:FILE.json [--json]`.
    static func rehearse(_ words: [String]) throws(Arguments.UsageError) -> ExitStatus {
        let arguments = try Arguments(words, spec: rehearseSpec)
        try arguments.requirePositionals(atMost: 1, atLeast: 1)
        let seed = arguments.positionals[0]
        let json = arguments.flags.contains("json")
        guard let source = arguments.values["source"], source.hasPrefix(DeltaExport.prefix) else {
            throw Arguments.UsageError(message: "rehearse of a delta seed needs --source delta:FILE.json")
        }
        if let status = FailureReport.missing(seed, command: "rehearse", json: json) { return status }
        guard let (definition, token) = try DeltaExport.loadDefinition(
            String(source.dropFirst(DeltaExport.prefix.count)), json: json) else { return .invalidInput }
        let console = arguments.console("rehearse")
        Interruption.install()
        let report: DeltaRehearsalReport
        do {
            report = try DeltaRehearsal.run(
                seed: seed, definition: definition, bearerToken: token,
                options: NetworkOptions(arguments).delta())
        } catch {
            var status = ExitStatus.checkFailed
            if error.rule == "interrupted" {
                status = .interrupted
            } else if case .install(let install) = error {
                if case .rejected = install { status = .checkFailed } else { status = .invalidInput }
            }
            return DeltaExport.report(
                rule: error.rule, message: error.description, status: status, json: json, prefix: "rehearse failed: ")
        }
        if json {
            output(JSONObject((report.json.objectValue?.members ?? []) + [JSONMember("seed", .string(seed))]))
        } else {
            for entity in report.entities {
                console.info("  \(entity.name): warmed from the seed's checkpoint in \(entity.warmPages) page(s) to "
                    + "\(entity.warmedRows) rows; a full pull from zero: \(entity.fullRows) rows in "
                    + "\(entity.fullPages) page(s)\n")
            }
            for difference in report.differences {
                console.result("DIFF \(difference.kind.rawValue) (entity \(difference.entity), key \(difference.key))\n")
            }
            if report.passed {
                console.info("rehearsal passed: the seed warmed from its checkpoints matches a full pull\n")
            } else {
                console.result("rehearsal failed: \(report.differences.count) row(s) differ from a full pull\n")
            }
        }
        return report.passed ? .success : .checkFailed
    }

    private static func output(_ object: JSONObject) {
        Terminal.out(bytes: ((try? CanonicalJSON.encode(.object(object))) ?? []) + [0x0A])
    }
}

/// `seedkit warm --source delta:FILE.json --db APP.db [--json]`: brings a database installed from a delta seed
/// current from its checkpoints (``DeltaWarm``), as the app's first sync would. SIGINT/SIGTERM end it before its
/// next request (exit 130); every page applied so far stays applied with its checkpoint, so the next warm resumes.
enum WarmCommand {
    static let spec = CommandSpec(
        "warm", "bring a database installed from a delta seed current from its checkpoints",
        options: [
            .value("source", "delta:FILE.json", .text, "the delta source definition the seed was exported from",
                   required: true),
            .value("db", "APP.db", .path, "the database installed from the delta seed", required: true),
            .json("one JSON object: the rows and checkpoint of each entity type"),
        ] + NetworkOptions.specs)

    static func run(_ words: [String]) throws(Arguments.UsageError) -> ExitStatus {
        let arguments = try Arguments(words, spec: spec)
        try arguments.requirePositionals(atMost: 0)
        let json = arguments.flags.contains("json")
        guard let source = arguments.values["source"], source.hasPrefix(DeltaExport.prefix) else {
            throw Arguments.UsageError(message: "warm needs --source delta:FILE.json")
        }
        guard let database = arguments.values["db"], !database.isEmpty else {
            throw Arguments.UsageError(message: "warm needs --db APP.db")
        }
        guard let (definition, token) = try DeltaExport.loadDefinition(
            String(source.dropFirst(DeltaExport.prefix.count)), json: json) else { return .invalidInput }
        let console = arguments.console("warm")
        Interruption.install()
        do {
            let report = try DeltaWarm.warm(
                definition: definition, bearerToken: token, database: database,
                options: NetworkOptions(arguments).delta())
            if json {
                let entities = report.entities.map { entity in
                    JSONValue.object(JSONObject([
                        JSONMember("entity", .string(entity.name)),
                        JSONMember("pages", .number(JSONNumber(Int64(entity.pages)))),
                        JSONMember("resets", .number(JSONNumber(Int64(entity.resets)))),
                        JSONMember("rows", .number(JSONNumber(entity.rows))),
                    ]))
                }
                let object = JSONObject([
                    JSONMember("db", .string(database)), JSONMember("entities", .array(entities)),
                ])
                Terminal.out(bytes: ((try? CanonicalJSON.encode(.object(object))) ?? []) + [0x0A])
            } else {
                for entity in report.entities {
                    console.info("  \(entity.name): \(entity.rows) rows after \(entity.pages) page(s)"
                        + (entity.resets > 0 ? ", \(entity.resets) reset(s)" : "") + "\n")
                }
                console.info("ok: \(database) is current\n")
            }
            return .success
        } catch {
            if error.rule == "interrupted" {
                return DeltaExport.report(
                    rule: "interrupted", message: "interrupted; the pages applied so far are kept with their "
                        + "checkpoints", status: .interrupted, json: json)
            }
            var status = error.isInputError ? ExitStatus.invalidInput : .checkFailed
            if error.rule == "retries_exhausted" { status = .retriesExhausted }
            if case .database = error { status = .invalidInput }
            return DeltaExport.report(error, status: status, json: json, command: "warm")
        }
    }
}
