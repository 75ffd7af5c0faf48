import Foundation
import SeedArtifacts
import SynchroProtocol

/// `seedkit export`: one portable seed from a server's operator export routes, verified, published
/// atomically, with `<out>.evidence.json` beside it (`spec/seed-format.md` §5).
///
/// The operator token is read from the environment variable named by `--token-env` (default
/// `SEEDKIT_OPERATOR_TOKEN`), never from the command line, and never printed.
enum ExportCommand {
    static func run(_ words: [String]) throws(Arguments.UsageError) -> ExitStatus {
        let arguments = try Arguments(
            words, flags: ["json", "force", "quiet"],
            valued: ["source", "token-env", "out", "scopes", "page-limit"])
        guard arguments.positionals.isEmpty else {
            throw Arguments.UsageError(message: "export takes no positional arguments")
        }
        guard let source = arguments.values["source"],
              source.hasPrefix("http://") || source.hasPrefix("https://")
        else { throw Arguments.UsageError(message: "export needs --source http(s)://HOST:PORT") }
        guard let output = arguments.values["out"], !output.isEmpty else {
            throw Arguments.UsageError(message: "export needs --out FILE")
        }
        let variable = arguments.values["token-env"] ?? "SEEDKIT_OPERATOR_TOKEN"
        guard let token = ProcessInfo.processInfo.environment[variable], !token.isEmpty else {
            throw Arguments.UsageError(message: "the environment variable \(variable) (--token-env) is not set")
        }
        var options = SeedExportOptions(overwrite: arguments.flags.contains("force"))
        if let text = arguments.values["page-limit"] {
            guard let limit = Int64(text), (1...1000).contains(limit) else {
                throw Arguments.UsageError(message: "--page-limit needs a count in 1…1000")
            }
            options.pageLimit = limit
        }
        if let list = arguments.values["scopes"] {
            let scopes = list.split(separator: ",").map(String.init)
            guard !scopes.isEmpty, scopes.allSatisfy({ !$0.isEmpty }) else {
                throw Arguments.UsageError(message: "--scopes needs a comma-separated list of scope IDs")
            }
            options.scopes = scopes
        }
        let json = arguments.flags.contains("json")
        let progress = ProgressLine(enabled: !json && !arguments.flags.contains("quiet"))
        do {
            let exportSource = try HTTPExportSource(baseURL: source, operatorToken: token)
            let report = try SeedExporter.export(from: exportSource, to: output, options: options) { event in
                progress.show(event)
            }
            progress.finish()
            let evidence = SeedEvidence(
                export: report, artifacts: [try SeedEvidence.Artifact(path: output)],
                timings: [("export", report.seconds)])
            let evidencePath = output + ".evidence.json"
            try Data(try evidence.encoded()).write(to: URL(fileURLWithPath: evidencePath), options: .atomic)
            if json {
                var object = evidence.json.objectValue ?? JSONObject([])
                object = JSONObject(object.members + [
                    JSONMember("path", .string(output)), JSONMember("evidence", .string(evidencePath)),
                ])
                Terminal.out(bytes: (try CanonicalJSON.encode(.object(object))) + [0x0A])
            } else if !arguments.flags.contains("quiet") {
                let rate = report.seconds > 0 ? Double(report.rows) / report.seconds : 0
                Terminal.out("""
                    exported \(report.rows) rows in \(report.scopes.count) portable scope(s) to \(output) \
                    (\(report.bytes) bytes, \(String(format: "%.2f", report.seconds)) s, \(Int(rate)) rows/s)
                    evidence: \(evidencePath)

                    """)
            }
            return .success
        } catch let error as SeedExportError {
            progress.finish()
            report(error, json: json)
            return error.isInputError ? .invalidInput : .checkFailed
        } catch {
            progress.finish()
            Terminal.err("seedkit: export failed: \(error)\n")
            return .checkFailed
        }
    }

    private static func report(_ error: SeedExportError, json: Bool) {
        if json {
            let object = JSONValue.object(JSONObject([
                JSONMember("error", .object(JSONObject([
                    JSONMember("rule", .string(error.rule)), JSONMember("message", .string(error.description)),
                ])))
            ]))
            Terminal.out(bytes: ((try? CanonicalJSON.encode(object)) ?? []) + [0x0A])
        } else {
            Terminal.err("seedkit: export failed: \(error)\n")
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

/// A one-line progress display on standard error, only when it is a terminal.
final class ProgressLine: @unchecked Sendable {
    private let enabled: Bool
    private var total: Int64 = 0
    private var done: Int64 = 0
    private let started = ContinuousClock.now
    private var lastDraw = ContinuousClock.now

    init(enabled: Bool) {
        self.enabled = enabled && isatty(STDERR_FILENO) == 1
    }

    func show(_ event: SeedExportEvent) {
        guard enabled else { return }
        switch event {
        case .started(let scopes): total = scopes.reduce(0) { $0 + $1.cardinality }
        case .rows(_, let rows): done += rows
        case .verifying:
            Terminal.err("\r\u{1B}[Kverifying…")
            return
        }
        let now = ContinuousClock.now
        guard now - lastDraw > .milliseconds(100) || done == total else { return }
        lastDraw = now
        let elapsed = now - started
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let rate = seconds > 0 ? Double(done) / seconds : 0
        let percent = total > 0 ? Int(Double(done) * 100 / Double(total)) : 100
        let remaining = rate > 0 ? Int(Double(total - done) / rate) : 0
        Terminal.err("\r\u{1B}[Kexport \(percent)%  \(done)/\(total) rows  \(Int(rate)) rows/s  ~\(remaining)s left")
    }

    func finish() {
        if enabled { Terminal.err("\r\u{1B}[K") }
    }
}
