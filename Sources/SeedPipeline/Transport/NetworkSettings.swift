import SynchroClient
import SynchroHTTP

/// How the pipeline's and the rehearsal's requests behave on the network: each request's time limit, the retries of
/// a request that got no usable answer, the wait between them (injected: tests never sleep) and who is told of
/// each retry as it is scheduled (docs/cli.md, "Network failures, retries and timeouts").
public struct NetworkSettings: Sendable {
    /// The limit of one request, connection included.
    public var timeout: Duration
    /// Retries after the first attempt of one request.
    public var retries: Int
    /// Waits between attempts.
    public var sleep: @Sendable (Duration) -> Void
    /// Told of each retry before its wait.
    public var onRetry: @Sendable (NetworkRetry) -> Void

    public init(
        timeout: Duration = NetworkTimeouts.defaultTimeout, retries: Int = NetworkRetryPolicy.defaultRetries,
        sleep: @escaping @Sendable (Duration) -> Void = NetworkRetryPolicy.realSleep,
        onRetry: @escaping @Sendable (NetworkRetry) -> Void = { _ in }
    ) {
        self.timeout = timeout
        self.retries = max(0, retries)
        self.sleep = sleep
        self.onRetry = onRetry
    }

    /// The retry policy of the export source's requests.
    public var retryPolicy: NetworkRetryPolicy {
        NetworkRetryPolicy(retries: retries, sleep: sleep, onRetry: onRetry)
    }

    /// The sync engine's policy: upstream's timing with `retries + 1` attempts.
    public var syncRetryPolicy: SyncRetryPolicy {
        SyncRetryPolicy(maxAttempts: retries + 1)
    }

    /// A sync event handler that reports the engine's retries through ``onRetry`` (the URL from `server` and the
    /// phase) before handing every event to `events`.
    public func announcingRetries(
        server: String, _ events: @escaping @Sendable (SyncEvent) -> Void
    ) -> @Sendable (SyncEvent) -> Void {
        let (onRetry, attempts) = (onRetry, retries + 1)
        return { event in
            if case .retryScheduled(let phase, let attempt, let status, let delay, let failure) = event {
                onRetry(NetworkRetry(
                    attempt: attempt, attempts: max(attempt, attempts),
                    rule: status.map { "http_\($0)" } ?? failure?.rule ?? "transport",
                    url: NetworkFailure.displayURL(server) + "/sync/" + (phase == .renew ? "push" : phase.rawValue),
                    delay: delay))
            }
            events(event)
        }
    }
}

/// The per-request time limits every network command shares (`--timeout SECONDS`, docs/cli.md).
public enum NetworkTimeouts {
    /// The default limit of one request, connection included.
    public static let defaultTimeout: Duration = .seconds(60)
    /// The longest wait for the connection (and TLS session) within a request's limit.
    public static let connectLimit = CurlTransport.Configuration.connectLimit
    /// The accepted `--timeout` values, in seconds.
    public static let range: ClosedRange<Int> = 1...3_600

    /// A transport configuration for `baseURL` whose requests end after `timeout`.
    public static func configuration(baseURL: String, timeout: Duration) -> CurlTransport.Configuration {
        CurlTransport.Configuration(baseURL: baseURL, timeout: timeout)
    }
}
