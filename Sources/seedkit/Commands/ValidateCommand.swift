import Foundation
import SeedPipeline
import SynchroClient
import SynchroStore
import SynchroProtocol

/// `seedkit validate --db FILE [--server URL --token-env VAR] [--json]`: every consistency check of a client
/// store, from ``StoreValidator``, without changing the file. With `--server`, each scope's stored checksum is
/// also compared with the server's through one unapplied pull. Exit 0 when every check holds, 1 with findings,
/// 2 for a wrong invocation or a missing file.
enum ValidateCommand {
    static let spec = CommandSpec(
        "validate", "every consistency check of a client store, read-only",
        options: [
            .value("db", "FILE", .path, "the client store to check", required: true),
            .value("server", "URL", .text, "also compare each scope's checksum with this server's (needs a token)"),
            .secretVariable("token", "with --server: the variable holding the bearer credential"),
            .secretFile("token", "with --server: the file holding the bearer credential"),
            .value("app-version", "V", .version, "with --server: app_version and X-App-Version", default: "1.0.0"),
            .json("one JSON object with every check instead of text"),
        ] + NetworkOptions.specs)

    static func run(_ words: [String]) throws(Arguments.UsageError) -> ExitStatus {
        let arguments = try Arguments(words, spec: spec)
        guard arguments.positionals.isEmpty else {
            throw Arguments.UsageError(message: "validate takes no positional arguments")
        }
        guard let path = arguments.values["db"], !path.isEmpty else {
            throw Arguments.UsageError(message: "validate needs --db FILE")
        }
        let server = try serverOptions(arguments)
        let network = NetworkOptions(arguments)
        if let status = FailureReport.missing(path, command: "validate", json: arguments.flags.contains("json")) {
            return status
        }
        let console = arguments.console("validate")
        console.detail("store \(path), opened read-only")
        let start = ContinuousClock.now
        let validator = StoreValidator(path: path)
        let validation: StoreValidation
        do {
            if let server {
                console.detail("comparing with \(Console.displayURL(server.url)), credential from "
                    + server.source)
                let settings = network.settings(
                    command: "validate", json: arguments.flags.contains("json"), console: console)
                let transport = try HTTPSyncTransport(
                    baseURL: server.url, credential: server.token, appVersion: server.appVersion,
                    timeout: network.timeout, retry: settings.retryPolicy)
                validation = try validator.validate(against: transport)
            } else {
                validation = try validator.validate()
            }
        } catch let error as ClientStoreError {
            Terminal.err("seedkit: cannot read the client store (\(error.rule)): \(error)\n")
            return .checkFailed
        } catch {
            Terminal.err("seedkit: cannot set up the transport: \(error)\n")
            return .checkFailed
        }
        console.detail("\(validation.scopes.count) scope(s) checked", since: start)
        if arguments.flags.contains("json") {
            guard JSONLines.write(json(validation)) else { return .checkFailed }
        } else {
            print(validation, console)
        }
        return validation.isValid ? .success : .checkFailed
    }

    /// `--server`, `--token-env` (or `--token-file`) and `--app-version` go together; the secret is read from the
    /// environment or a file only.
    private static func serverOptions(
        _ arguments: Arguments
    ) throws(Arguments.UsageError) -> (url: String, token: String, source: String, appVersion: String)? {
        guard let url = arguments.values["server"] else {
            guard arguments.values["token-env"] == nil && arguments.values["token-file"] == nil else {
                throw Arguments.UsageError(message: "--token-env and --token-file need --server URL")
            }
            return nil
        }
        guard url.hasPrefix("http://") || url.hasPrefix("https://") else {
            throw Arguments.UsageError(message: "--server needs an http:// or https:// URL")
        }
        guard arguments.values["token-env"] != nil || arguments.values["token-file"] != nil else {
            throw Arguments.UsageError(message: "--server needs --token-env VAR or --token-file FILE")
        }
        let appVersion = arguments.value("app-version") ?? ""
        let secret = try SyncCommand.credential(arguments)
        return (url, secret.value, secret.source, appVersion)
    }

    /// The JSON form documented in docs/cli.md.
    static func json(_ validation: StoreValidation) -> [(String, JSONValue)] {
        let findings = validation.findings.map { finding -> JSONValue in
            var members = [JSONMember("rule", .string(finding.rule))]
            if let scope = finding.scope { members.append(JSONMember("scope", .string(scope))) }
            if let table = finding.table { members.append(JSONMember("table", .string(table))) }
            members.append(JSONMember("message", .string(finding.description)))
            return .object(JSONObject(members))
        }
        let scopes = validation.scopes.map { scope -> JSONValue in
            .object(JSONObject([
                JSONMember("scope_id", .string(scope.scopeID)),
                JSONMember("rows", .number(JSONNumber(Int64(scope.rows)))),
                JSONMember("has_cursor", .bool(scope.hasCursor)),
                JSONMember("has_checksum", .bool(scope.hasChecksum)),
                JSONMember("digest", .string(scope.digest.rawValue)),
                JSONMember("digest_verified", .bool(scope.digestVerified)),
                JSONMember("rows_awaiting_pull", .number(JSONNumber(Int64(scope.rowsAwaitingPull)))),
                JSONMember("server", scope.server.map { .string($0.rawValue) } ?? .null),
            ]))
        }
        return [
            ("valid", .bool(validation.isValid)),
            ("findings", .array(findings)),
            ("scopes", .array(scopes)),
            ("newly_assigned_scopes", .array(validation.newlyAssignedScopes.map(JSONValue.string))),
            ("pending_mutations", .number(JSONNumber(Int64(validation.pendingMutations)))),
            ("blocking_error", validation.blockingError.map(JSONValue.string) ?? .null),
            ("migration_journal", .bool(validation.migrationJournal)),
        ]
    }

    /// One line per scope, one per finding, then the verdict; only the findings when quiet.
    static func print(_ validation: StoreValidation, _ console: Console) {
        console.info(stateLines(validation).map { $0 + "\n" }.joined())
        for finding in validation.findings {
            console.result("FAIL \(finding.rule): \(finding)\n")
        }
        console.info(validation.isValid ? "ok: the client store is consistent\n"
            : "\(validation.findings.count) finding(s)\n")
    }

    /// What the store holds: one line per scope, then pending work and stored errors.
    private static func stateLines(_ validation: StoreValidation) -> [String] {
        var lines: [String] = []
        for scope in validation.scopes {
            let digest = switch scope.digest {
            case .verified: "digest verified"
            case .mismatch: "digest FAILED"
            case .awaitingPull: "\(scope.rowsAwaitingPull) row(s) await the pull echo"
            case .awaitingSchemaVerification: "checksum awaits verification under the active schema"
            case .noChecksum: "no checksum"
            }
            lines.append("scope \(scope.scopeID): \(scope.rows) rows, \(digest)"
                + (scope.server.map { ", server: \($0.rawValue.replacingOccurrences(of: "_", with: " "))" } ?? ""))
        }
        for scope in validation.newlyAssignedScopes {
            lines.append("scope \(scope): newly assigned by the server")
        }
        if validation.pendingMutations > 0 { lines.append("pending mutations: \(validation.pendingMutations)") }
        if let code = validation.blockingError { lines.append("blocking error: \(code)") }
        if validation.migrationJournal { lines.append("schema migration journal: resumes on the next sync") }
        return lines
    }
}
