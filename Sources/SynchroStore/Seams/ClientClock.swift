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
    ///
    /// Test hook, like `SEEDKIT_CRASH_AT`: `SEEDKIT_TEST_CLOCK_OFFSET_MS=<integer>` (read once per process) shifts
    /// this clock by that many milliseconds, so a process-death test can restart a `seedkit sync` that was killed
    /// right after recording a retry deadline (`backoff.recorded`) as if the deadline had passed, instead of
    /// sleeping through the real `Retry-After`. The restarted engine still reads the durable record and decides
    /// by its deadline; only the clock it compares with is later. Unset, empty or not an integer, the offset is 0
    /// and this is the plain system clock, which is what every production run uses.
    public static let system: ClientClock = {
        let offset = testOffsetMilliseconds
        return ClientClock {
            let now = Int64((Date().timeIntervalSince1970 * 1000).rounded(.down))
            let (shifted, overflow) = now.addingReportingOverflow(offset)
            return overflow ? (offset > 0 ? .max : .min) : shifted
        }
    }()

    /// The offset of the `SEEDKIT_TEST_CLOCK_OFFSET_MS` test hook; 0 unless it holds an integer.
    static let testOffsetMilliseconds: Int64 = {
        guard let text = ProcessInfo.processInfo.environment["SEEDKIT_TEST_CLOCK_OFFSET_MS"] else { return 0 }
        return Int64(text) ?? 0
    }()

    /// Unix epoch milliseconds now.
    public func nowMilliseconds() -> Int64 {
        read()
    }

    /// Now as a capture timestamp.
    public func timestamp() -> String {
        CaptureTimestamp.format(unixMilliseconds: nowMilliseconds())
    }
}
