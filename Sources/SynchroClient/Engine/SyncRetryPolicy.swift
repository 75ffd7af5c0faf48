import SynchroStore
/// How a cycle retries 429, 503 (including `capture_pending`) and lost responses, with the upstream timing
/// (`spec/client-store.md` §12, `spec/wire-protocol.md` §8.3): for attempt *n* the base delay is
/// `min(baseDelay × 2^(n−1), maxDelay)` (1, 2, 4, 8, 16, 16, … s by default), plus a jitter drawn uniformly from
/// `[0, jitterFraction × base]`; the server's `Retry-After` is the minimum. A step of one cycle fails after
/// `maxAttempts` attempts; the durable retry record (``SyncBackoff``) keeps the next eligible time beyond it.
public struct SyncRetryPolicy: Sendable, Equatable {
    /// Attempts of one request within one cycle before the cycle fails (the first attempt included).
    public var maxAttempts: Int
    /// Base delay after the first failure; doubled after each further failure.
    public var baseDelay: Duration
    /// Upper bound of the base delay (a longer `Retry-After` still wins: it is the server's minimum).
    public var maxDelay: Duration
    /// The largest jitter as a fraction of the base delay (upstream: 0.5).
    public var jitterFraction: Double

    /// Creates a policy; the defaults are upstream's.
    public init(
        maxAttempts: Int = 5, baseDelay: Duration = .seconds(1), maxDelay: Duration = .seconds(16),
        jitterFraction: Double = 0.5
    ) {
        self.maxAttempts = max(1, maxAttempts)
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
        self.jitterFraction = max(0, jitterFraction)
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

    /// Parses a `Retry-After` value: integer or decimal seconds (§8.3). An IMF-fixdate yields nil, and the
    /// backoff applies: the engine has no wall clock to subtract from, and upstream always sends seconds.
    public static func parseRetryAfter(_ text: String) -> Duration? {
        var value = Substring(text)
        while value.first == " " || value.first == "\t" { value.removeFirst() }
        while value.last == " " || value.last == "\t" { value.removeLast() }
        let parts = value.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard let whole = parts.first, !whole.isEmpty, whole.allSatisfy(\.isASCIIDigit),
              whole == "0" || whole.first != "0", let seconds = Int64(whole)
        else {
            return nil
        }
        guard parts.count == 2 else { return .seconds(seconds) }
        let fraction = parts[1]
        guard !fraction.isEmpty, fraction.allSatisfy(\.isASCIIDigit) else { return nil }
        let digits = fraction.prefix(9)
        let nanoseconds = Int64(digits + String(repeating: "0", count: 9 - digits.count)) ?? 0
        return .seconds(seconds) + .nanoseconds(nanoseconds)
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}
