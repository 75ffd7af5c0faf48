import Foundation
import SeedPipeline
import SynchroClient
import SynchroHTTP
import SynchroProtocol

/// `--timeout SECONDS` and `--retries N`, which every network command accepts (sync, rebuild, validate, rehearse,
/// export, pipeline run; docs/cli.md, "Network failures, retries and timeouts"), and the one way a retry is shown:
/// a line on standard error as it is scheduled (attempt n of m, the kind, the URL, the wait) and, with `--json`, a
/// `retry` event.
struct NetworkOptions: Sendable {
    /// The accepted `--retries` values.
    static let retryRange: ClosedRange<Int> = 0...10

    /// `--timeout` and `--retries`, declared once and added to every network command's declaration.
    static let specs: [OptionSpec] = [
        .value(
            "timeout", "SECONDS",
            .integer(Int64(NetworkTimeouts.range.lowerBound)...Int64(NetworkTimeouts.range.upperBound)),
            "limit of one request, connecting included (connecting gets at most 10 s of it)",
            default: "\(NetworkTimeouts.defaultTimeout.components.seconds)"),
        .value(
            "retries", "N", .integer(Int64(retryRange.lowerBound)...Int64(retryRange.upperBound)),
            "retries of a failed request (each shown as it is scheduled); exhausted retries exit 4",
            default: "\(NetworkRetryPolicy.defaultRetries)"),
    ]

    /// The limit of one request, connection included.
    let timeout: Duration
    /// Retries after the first attempt of one request.
    let retries: Int

    /// Reads the two options; their ranges were checked by the parser against ``specs``.
    init(_ arguments: Arguments) {
        timeout = arguments.integer("timeout").map { .seconds($0) } ?? NetworkTimeouts.defaultTimeout
        retries = arguments.integer("retries").map { Int($0) } ?? NetworkRetryPolicy.defaultRetries
    }

    /// Attempts of one request, the first included.
    var attempts: Int { retries + 1 }

    /// `timeout 60 s per request, 3 retries`, for `--verbose`.
    var summary: String {
        "timeout \(timeout.components.seconds) s per request, \(retries) retr\(retries == 1 ? "y" : "ies")"
    }

    /// The sync engine's policy: upstream's timing (1, 2, 4, … s plus jitter, at least `Retry-After`) with this
    /// many attempts.
    var syncRetryPolicy: SyncRetryPolicy {
        SyncRetryPolicy(maxAttempts: attempts)
    }

    /// The settings of a command's requests, announcing each retry for `command` (with `--json` on standard output
    /// for the JSON Lines commands, `jsonLines`).
    func settings(command: String, json: Bool, console: Console, jsonLines: Bool = false) -> NetworkSettings {
        NetworkSettings(timeout: timeout, retries: retries, sleep: Self.sleep) { retry in
            Self.announce(retry, command: command, json: json, console: console, jsonOnStandardOutput: jsonLines)
        }
    }

    /// Waits between attempts. `SEEDKIT_TEST_RETRY_WAIT_MS` replaces every wait's length (a test hook: the waits
    /// announced are still the policy's), so tests of retries never sleep through them.
    @Sendable static func sleep(_ duration: Duration) {
        var wait = duration
        if let text = ProcessInfo.processInfo.environment["SEEDKIT_TEST_RETRY_WAIT_MS"], let milliseconds = Int(text) {
            wait = .milliseconds(max(0, milliseconds))
        }
        guard wait > .zero else { return }
        NetworkRetryPolicy.realSleep(wait)
    }

    /// Shows one scheduled retry: a line on standard error unless quiet, and with `--json` a `retry` event, on
    /// standard output for the JSON Lines commands (`jsonOnStandardOutput`), else on standard error so that standard
    /// output stays one document.
    static func announce(
        _ retry: NetworkRetry, command: String, json: Bool, console: Console, jsonOnStandardOutput: Bool
    ) {
        if json {
            let object = JSONValue.object(JSONObject([
                JSONMember("event", .string("retry")),
                JSONMember("attempt", .number(JSONNumber(Int64(retry.attempt)))),
                JSONMember("attempts", .number(JSONNumber(Int64(retry.attempts)))),
                JSONMember("rule", .string(retry.rule)), JSONMember("url", .string(retry.url)),
                JSONMember("delay_ms", .number(JSONNumber(milliseconds(retry.delay)))),
            ]))
            if let bytes = try? CanonicalJSON.encode(object) {
                if jsonOnStandardOutput {
                    Terminal.out(bytes: bytes + [0x0A])
                } else {
                    Terminal.err(String(decoding: bytes, as: UTF8.self) + "\n")
                }
            }
        }
        if !console.isQuiet { Terminal.err("\(command): \(retry.description)\n") }
    }

    static func milliseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
