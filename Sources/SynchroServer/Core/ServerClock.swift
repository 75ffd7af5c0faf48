import Foundation
import Synchronization
import SynchroProtocol

/// The server's source of time, injected so tests control rebuild expiry and timestamps.
public protocol ServerClock: Sendable {
    /// Microseconds since 1970-01-01T00:00:00Z.
    func nowMicroseconds() -> Int64
}

/// Wall-clock time.
public struct SystemServerClock: ServerClock {
    public init() {}

    public func nowMicroseconds() -> Int64 {
        Int64((Date().timeIntervalSince1970 * 1_000_000).rounded())
    }
}

/// A clock that moves only when told to: tests advance it past a rebuild session's 24 hours.
public final class ManualServerClock: ServerClock {
    private let current: Mutex<Int64>

    public init(microseconds: Int64 = 1_795_000_000_000_000) {
        current = Mutex(microseconds)
    }

    public func nowMicroseconds() -> Int64 { current.withLock { $0 } }

    public func advance(microseconds: Int64) {
        current.withLock { $0 += microseconds }
    }

    public func advance(hours: Int64) { advance(microseconds: hours * 3_600_000_000) }
}

/// Canonical protocol timestamps `YYYY-MM-DDTHH:MM:SS.ffffffZ` (`spec/wire-protocol.md` §2.3).
public enum ProtocolTimestamp {
    /// The canonical text of an instant given in microseconds since the Unix epoch.
    public static func format(microseconds: Int64) -> String {
        let perDay: Int64 = 86_400_000_000
        var days = microseconds / perDay
        var rest = microseconds % perDay
        if rest < 0 {
            rest += perDay
            days -= 1
        }
        let (year, month, day) = civilDate(daysSinceEpoch: days)
        let seconds = rest / 1_000_000
        let fraction = rest % 1_000_000
        return pad(year, 4) + "-" + pad(month, 2) + "-" + pad(day, 2) + "T" + pad(seconds / 3600, 2) + ":"
            + pad(seconds / 60 % 60, 2) + ":" + pad(seconds % 60, 2) + "." + pad(fraction, 6) + "Z"
    }

    /// Howard Hinnant's days-to-civil conversion for the proleptic Gregorian calendar.
    static func civilDate(daysSinceEpoch: Int64) -> (Int64, Int64, Int64) {
        let z = daysSinceEpoch + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    private static func pad(_ value: Int64, _ width: Int) -> String {
        let text = String(value)
        return String(repeating: "0", count: max(0, width - text.count)) + text
    }
}
