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
    /// The option names, added to each network command's valued options.
    static let names: Set<String> = ["timeout", "retries"]
    /// The accepted `--retries` values.
    static let retryRange: ClosedRange<Int> = 0...10

    /// The limit of one request, connection included.
    let timeout: Duration
    /// Retries after the first attempt of one request.
    let retries: Int

    init(_ arguments: Arguments) throws(Arguments.UsageError) {
        var timeout = NetworkTimeouts.defaultTimeout
        if let text = arguments.values["timeout"] {
            guard let seconds = Int(text), NetworkTimeouts.range.contains(seconds) else {
                throw Arguments.UsageError(
                    message: "--timeout needs seconds in \(NetworkTimeouts.range.lowerBound)…"
                        + "\(NetworkTimeouts.range.upperBound)")
            }
            timeout = .seconds(seconds)
        }
        var retries = NetworkRetryPolicy.defaultRetries
        if let text = arguments.values["retries"] {
            guard let count = Int(text), Self.retryRange.contains(count) else {
                throw Arguments.UsageError(
                    message: "--retries needs a count in \(Self.retryRange.lowerBound)…\(Self.retryRange.upperBound)")
            }
            retries = count
        }
        self.timeout = timeout
        self.retries = retries
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
