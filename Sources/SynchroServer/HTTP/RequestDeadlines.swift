import Glibc
import Synchronization

/// The deadline each connection has to deliver a complete request (request line, header fields and body), so
/// that a client sending one header line (or one body octet) at a time, each within the idle timeout, cannot
/// hold a connection for ever (issue #19). libmicrohttpd 0.9.75 has only an idle timeout, which every octet
/// restarts; this is the per-connection clock beside it.
///
/// The clock of a connection runs from when it opens, or from when its previous response was sent, until its
/// request is complete (the handler runs or an answer is queued). A connection past its deadline is shut down
/// (`shutdown(2)`, the descriptor stays libmicrohttpd's): its next read sees the end and libmicrohttpd closes it
/// as it would any connection its client closed. Used only on the daemon's event-loop thread; the lock makes
/// the type `Sendable`, it is never contended.
final class RequestDeadlines: Sendable {
    private struct Connection {
        let descriptor: Int32
        /// When its clock started; nil while a request is handled or answered.
        var since: ContinuousClock.Instant?
    }

    /// Nil: no deadline (connections are tracked for nothing).
    private let limit: Duration?
    private let connections = Mutex<[UInt: Connection]>([:])

    init(limit: Duration?) {
        self.limit = limit
    }

    /// A connection was accepted.
    func opened(_ connection: OpaquePointer, descriptor: Int32) {
        guard limit != nil, descriptor >= 0 else { return }
        connections.withLock { $0[Self.key(connection)] = Connection(descriptor: descriptor, since: .now) }
    }

    /// The connection's request is complete: its clock stops until the response is sent.
    func received(_ connection: OpaquePointer) {
        guard limit != nil else { return }
        connections.withLock { $0[Self.key(connection)]?.since = nil }
    }

    /// The connection's request was answered (or abandoned): the clock of its next request starts.
    func answered(_ connection: OpaquePointer) {
        guard limit != nil else { return }
        connections.withLock { $0[Self.key(connection)]?.since = .now }
    }

    func closed(_ connection: OpaquePointer) {
        guard limit != nil else { return }
        _ = connections.withLock { $0.removeValue(forKey: Self.key(connection)) }
    }

    /// Shuts down every connection past its deadline at `now`; returns how long until the next deadline, or nil
    /// when no clock runs.
    func expire(now: ContinuousClock.Instant = .now) -> Duration? {
        guard let limit else { return nil }
        return connections.withLock { connections in
            var next: Duration?
            for (key, connection) in connections {
                guard let since = connection.since else { continue }
                let left = since + limit - now
                if left <= .zero {
                    _ = shutdown(connection.descriptor, Int32(SHUT_RDWR))
                    connections[key]?.since = nil
                } else {
                    next = min(next ?? left, left)
                }
            }
            return next
        }
    }

    private static func key(_ connection: OpaquePointer) -> UInt {
        UInt(bitPattern: connection)
    }
}
