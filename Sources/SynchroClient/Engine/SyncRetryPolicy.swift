/// How a cycle retries 429, 503 (including `capture_pending`) and lost responses (`spec/wire-protocol.md` §8.3):
/// the server's `Retry-After` is the minimum delay, bounded exponential backoff applies to repeated failures,
/// and a step fails after `maxAttempts` attempts. No jitter: the engine core stays deterministic.
public struct SyncRetryPolicy: Sendable, Equatable {
    /// Attempts of one request before the cycle fails (the first attempt included).
    public var maxAttempts: Int
    /// Backoff after the first failure; doubled after each further failure.
    public var baseDelay: Duration
    /// Upper bound of the backoff (a longer `Retry-After` still wins: it is the server's minimum).
    public var maxDelay: Duration

    /// Creates a policy.
    public init(maxAttempts: Int = 5, baseDelay: Duration = .seconds(1), maxDelay: Duration = .seconds(60)) {
        self.maxAttempts = max(1, maxAttempts)
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
    }

    /// The delay after failed attempt `attempt` (1-based), given the reply's `Retry-After` if any.
    public func delay(afterAttempt attempt: Int, retryAfter: Duration?) -> Duration {
        var backoff = baseDelay
        for _ in 1..<max(1, attempt) where backoff < maxDelay {
            backoff = backoff * 2
        }
        backoff = min(backoff, maxDelay)
        guard let retryAfter else { return backoff }
        return max(backoff, retryAfter)
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
