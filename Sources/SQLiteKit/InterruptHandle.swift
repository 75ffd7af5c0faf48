import CSQLite
import Synchronization

/// A thread-safe way to interrupt a connection's running statement (`sqlite3_interrupt`).
///
/// A `Connection` is not `Sendable`; its handle is, so a watchdog, a signal handler task or a cancellation
/// path can stop a long query. The lock guarantees `sqlite3_interrupt` never reaches a closed connection.
public final class InterruptHandle: Sendable {
    // The handle's address rather than the pointer: sqlite3_interrupt is the one call SQLite allows from
    // another thread, and an address is plain data that may cross threads.
    private let address: Mutex<Int>

    init(database: OpaquePointer) {
        address = Mutex(Int(bitPattern: UnsafeRawPointer(database)))
    }

    /// Makes the statement currently running on the connection fail with `SQLITE_INTERRUPT`.
    ///
    /// Statements that start after the running ones have finished are not affected.
    public func interrupt() {
        address.withLock { address in
            if let database = OpaquePointer(bitPattern: address) {
                sqlite3_interrupt(database)
            }
        }
    }

    func invalidate() {
        address.withLock { $0 = 0 }
    }
}
