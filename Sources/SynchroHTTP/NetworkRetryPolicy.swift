import Foundation

/// How a command retries a request that got no usable answer (docs/cli.md, "Network failures, retries and
/// timeouts"): transient transport failures (``TransportError/isTransient``: refused, timeout, reset) and the
/// statuses a proxy or a busy server sends (429, 502, 503, 504) are sent again after `1, 2, 4, … s` (at most
/// ``maxDelay``, at least the reply's `Retry-After`), up to ``attempts`` in all; a name that does not resolve and
/// TLS failures fail at once. Each retry is announced through ``onRetry`` before the wait, so a user sees it as it
/// happens; the wait goes through ``sleep``, which tests replace.
public struct NetworkRetryPolicy: Sendable {
    /// Attempts of one request, the first included (`--retries N` gives N + 1).
    public var attempts: Int
    /// The wait after the first failure; doubled after each further one.
    public var baseDelay: Duration
    /// The longest wait between two attempts (a longer `Retry-After` ends the retries instead).
    public var maxDelay: Duration
    /// Waits between attempts.
    public var sleep: @Sendable (Duration) -> Void
    /// Told of each retry before its wait.
    public var onRetry: @Sendable (NetworkRetry) -> Void

    /// The default number of retries after the first attempt.
    public static let defaultRetries = 3

    /// A policy of `retries` retries after the first attempt.
    public init(
        retries: Int = NetworkRetryPolicy.defaultRetries, baseDelay: Duration = .seconds(1),
        maxDelay: Duration = .seconds(16), sleep: @escaping @Sendable (Duration) -> Void = NetworkRetryPolicy.realSleep,
        onRetry: @escaping @Sendable (NetworkRetry) -> Void = { _ in }
    ) {
        attempts = max(0, retries) + 1
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
        self.sleep = sleep
        self.onRetry = onRetry
    }

    /// The statuses sent again: too many requests and a gateway's or busy server's refusal.
    public static let retryableStatuses: Set<Int> = [429, 502, 503, 504]

    /// The wait after failed attempt `attempt` (1-based): `baseDelay × 2^(attempt−1)`, at most ``maxDelay``.
    public func delay(afterAttempt attempt: Int) -> Duration {
        var delay = baseDelay
        for _ in 1..<max(1, attempt) where delay < maxDelay { delay = delay * 2 }
        return min(delay, maxDelay)
    }

    /// Sends `request` through `transport` (whose base URL is `baseURL`) as this policy allows. Returns the first
    /// response that is not a retryable status; throws a ``NetworkFailure`` naming the URL and the last kind when
    /// the attempts ran out or the failure is not retried.
    public func send(
        _ request: TransportRequest, via transport: any HTTPTransport, baseURL: String
    ) throws(NetworkFailure) -> TransportResponse {
        let url = baseURL + request.path
        var attempt = 0
        while true {
            attempt += 1
            let rule: String
            var wait = delay(afterAttempt: attempt)
            do {
                let response = try transport.send(request)
                guard Self.retryableStatuses.contains(response.status) else { return response }
                if let retryAfter = response.retryAfter(now: Date()) {
                    guard retryAfter <= maxDelay else {
                        throw NetworkFailure(url: url, status: response.status, attempts: attempt)
                    }
                    wait = max(wait, retryAfter)
                }
                guard attempt < attempts else {
                    throw NetworkFailure(url: url, status: response.status, attempts: attempt)
                }
                rule = "http_\(response.status)"
            } catch let failure as NetworkFailure {
                throw failure
            } catch let error as TransportError {
                guard error.isTransient, attempt < attempts else {
                    throw NetworkFailure(url: url, error: error, attempts: attempt)
                }
                rule = error.rule
            } catch {
                throw NetworkFailure(url: url, error: .other(code: -1), attempts: attempt)
            }
            onRetry(NetworkRetry(
                attempt: attempt, attempts: attempts, rule: rule, url: NetworkFailure.displayURL(url), delay: wait))
            sleep(wait)
        }
    }

    /// Real waiting.
    @Sendable public static func realSleep(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        Thread.sleep(forTimeInterval: Double(seconds) + Double(attoseconds) / 1e18)
    }
}

/// One retry as it is scheduled: attempt `attempt` of `attempts` failed with `rule` at `url`, the next one follows
/// after `delay`.
public struct NetworkRetry: Sendable, Hashable {
    public let attempt: Int
    public let attempts: Int
    public let rule: String
    /// The URL as safe to print.
    public let url: String
    public let delay: Duration

    public init(attempt: Int, attempts: Int, rule: String, url: String, delay: Duration) {
        self.attempt = attempt
        self.attempts = attempts
        self.rule = rule
        self.url = url
        self.delay = delay
    }

    /// `attempt 1 of 4 failed: connection_refused at http://127.0.0.1:9/sync/connect; retrying in 1.0 s`.
    public var description: String {
        let (seconds, attoseconds) = delay.components
        let wait = Double(seconds) + Double(attoseconds) / 1e18
        return "attempt \(attempt) of \(attempts) failed: \(rule) at \(url); retrying in "
            + String(format: "%.1f s", wait)
    }
}
