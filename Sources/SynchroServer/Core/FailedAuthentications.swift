import Synchronization
import SynchroProtocol

/// How many failed credential checks one client address may make within a window before it is refused.
public struct FailedAuthenticationLimit: Sendable, Equatable {
    /// Failed checks allowed within ``window``; the next request of that address is answered `429`.
    public var failures: Int
    /// The sliding window, in whole seconds.
    public var windowSeconds: Int64

    public init(failures: Int = 20, windowSeconds: Int64 = 60) {
        self.failures = max(1, failures)
        self.windowSeconds = max(1, windowSeconds)
    }
}

/// The failed bearer and operator checks of each client address within the limit's window, on the server's
/// (injectable) clock. An address with ``FailedAuthenticationLimit/failures`` failures in the window is refused
/// with `429 retry_later` before its credential is even looked at, until the oldest of them leaves the window:
/// guessing a credential is held to that many tries per window and address (issue #19), while other addresses
/// are served as before. Only addresses are kept, never what they presented.
final class FailedAuthentications: Sendable {
    let limit: FailedAuthenticationLimit
    private let clock: any ServerClock
    /// Failure instants (microseconds) per address, oldest first, at most `limit.failures` of them.
    private let failures = Mutex<[String: [Int64]]>([:])
    /// Addresses kept before those whose failures all left the window are forgotten.
    private static let pruneAbove = 4_096

    init(limit: FailedAuthenticationLimit, clock: any ServerClock) {
        self.limit = limit
        self.clock = clock
    }

    private var window: Int64 { limit.windowSeconds * 1_000_000 }

    /// Whole seconds until `address` may present a credential again, or nil when it may now (and always for a
    /// request that did not come over a socket).
    func retryAfter(for address: String?) -> Int64? {
        guard let address else { return nil }
        let now = clock.nowMicroseconds()
        let window = self.window
        return failures.withLock { failures -> Int64? in
            guard let recent = failures[address]?.filter({ $0 + window > now }) else { return nil }
            failures[address] = recent.isEmpty ? nil : recent
            guard recent.count >= limit.failures, let oldest = recent.first else { return nil }
            return max(1, (oldest + window - now + 999_999) / 1_000_000)
        }
    }

    /// Counts one failed check of `address`.
    func recordFailure(of address: String?) {
        guard let address else { return }
        let now = clock.nowMicroseconds()
        let window = self.window
        failures.withLock { failures in
            var recent = failures[address, default: []].filter { $0 + window > now }
            recent.append(now)
            failures[address] = Array(recent.suffix(limit.failures))
            if failures.count > Self.pruneAbove {
                failures = failures.filter { ($0.value.last ?? 0) + window > now }
            }
        }
    }
}
