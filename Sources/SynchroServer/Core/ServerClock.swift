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
        CivilTime.formatDateTime(microseconds)
    }
}
