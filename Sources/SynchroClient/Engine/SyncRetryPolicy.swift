import SynchroStore

/// How a cycle retries retryable answers (the envelope's `retryable: true`; without an envelope 429, 502, 503,
/// 504) and lost responses, with the upstream timing (`spec/client-store.md` §12, `spec/wire-protocol.md` §8.3):
/// for attempt *n* the base delay is `min(baseDelay × 2^(n−1), maxDelay)` (1, 2, 4, 8, 16, 16, … s by default),
/// plus a jitter drawn uniformly from `[0, jitterFraction × base]`; the server's `Retry-After` (either form) is the
/// minimum. A step of one cycle fails after `maxAttempts` attempts, or at once when the wait is longer than
/// ``longestWait``; the durable retry record (``SyncBackoff``) keeps the next eligible time beyond it.
public struct SyncRetryPolicy: Sendable, Equatable {
    /// Attempts of one request within one cycle before the cycle fails (the first attempt included).
    public var maxAttempts: Int
    /// Base delay after the first failure; doubled after each further failure.
    public var baseDelay: Duration
    /// Upper bound of the base delay (a longer `Retry-After` still wins: it is the server's minimum).
    public var maxDelay: Duration
    /// The largest jitter as a fraction of the base delay (upstream: 0.5).
    public var jitterFraction: Double
    /// The longest wait a run sleeps through (default one hour). A longer `Retry-After`, or a longer stored
    /// deadline, is kept as the durable deadline and the run ends with ``SyncCycleError/retriesExhausted`` instead
    /// of sleeping (docs/decisions.md "Retry-After: one parser, both forms, at most one hour of sleep").
    public var longestWait: Duration

    /// Creates a policy; the defaults are upstream's.
    public init(
        maxAttempts: Int = 5, baseDelay: Duration = .seconds(1), maxDelay: Duration = .seconds(16),
        jitterFraction: Double = 0.5, longestWait: Duration = .seconds(3_600)
    ) {
        self.maxAttempts = max(1, maxAttempts)
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
        self.jitterFraction = max(0, jitterFraction)
        self.longestWait = max(.zero, longestWait)
    }

    /// The delay after failed attempt `attempt` (1-based), given the reply's `Retry-After` if any and a random
    /// fraction in `[0, 1]` for the jitter (0: no jitter).
    public func delay(afterAttempt attempt: Int, retryAfter: Duration?, random: Double = 0) -> Duration {
        var base = baseDelay
        for _ in 1..<max(1, attempt) where base < maxDelay {
            base = base * 2
        }
        base = min(base, maxDelay)
        let fraction = min(max(random, 0), 1) * jitterFraction
        let backoff = base + base * fraction
        guard let retryAfter, retryAfter >= .zero else { return backoff }
        return max(backoff, retryAfter)
    }

    /// The next eligible time after waiting `delay` from `now`: `now + ceil(delay in ms)`, saturating at
    /// `Int64.max` (Unix epoch milliseconds).
    public static func deadline(now: Int64, delay: Duration) -> Int64 {
        let (seconds, attoseconds) = delay.components
        let wholeMilliseconds = attoseconds / 1_000_000_000_000_000
        let roundUp: Int64 = attoseconds % 1_000_000_000_000_000 > 0 ? 1 : 0
        let (secondsPart, secondsOverflow) = max(seconds, 0).multipliedReportingOverflow(by: 1000)
        let (milliseconds, sumOverflow) = secondsPart.addingReportingOverflow(max(wholeMilliseconds, 0) + roundUp)
        let (deadline, deadlineOverflow) = now.addingReportingOverflow(milliseconds)
        return secondsOverflow || sumOverflow || deadlineOverflow ? Int64.max : deadline
    }
}
