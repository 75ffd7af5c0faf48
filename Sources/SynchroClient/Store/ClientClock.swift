import Foundation

/// The wall clock the engine reads for the timestamps it writes itself (archive rows, normalized ledger rows).
///
/// Capture triggers read SQLite's own clock (`'now'`) because they run inside SQLite; both produce the same
/// `YYYY-MM-DDTHH:MM:SS.mmm000Z` form (`spec/client-store.md` §1).
public struct ClientClock: Sendable {
    private let read: @Sendable () -> Int64

    /// A clock that returns `read()` as Unix epoch milliseconds.
    public init(unixMilliseconds read: @escaping @Sendable () -> Int64) {
        self.read = read
    }

    /// The system clock.
    public static let system = ClientClock {
        Int64((Date().timeIntervalSince1970 * 1000).rounded(.down))
    }

    /// Unix epoch milliseconds now.
    public func nowMilliseconds() -> Int64 {
        read()
    }

    /// Now as a capture timestamp.
    public func timestamp() -> String {
        CaptureTimestamp.format(unixMilliseconds: nowMilliseconds())
    }
}
