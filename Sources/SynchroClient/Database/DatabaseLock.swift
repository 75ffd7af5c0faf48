import Foundation
import SynchroStore

/// The one-owner rule of a client database: an exclusive, non-blocking `flock` on `<database>.lock` beside the
/// file, held from open to close. A second open — by another process or by this one — fails at once instead of
/// running a second sync engine on the same durable state. The kernel drops the lock when the process dies, so
/// a killed owner never leaves the database locked.
final class DatabaseLock: Sendable {
    /// The lock file.
    let path: String
    private let descriptor: Int32

    /// Takes the lock for the database at `databasePath`.
    init(databasePath: String) throws(SynchroDatabaseError) {
        path = databasePath + ".lock"
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw .lockUnavailable(path: path, errno: errno) }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let failure = errno
            close(descriptor)
            if failure == EWOULDBLOCK { throw .databaseInUse(path: databasePath) }
            throw .lockUnavailable(path: path, errno: failure)
        }
        self.descriptor = descriptor
    }

    deinit {
        // Closing the descriptor releases the lock; the file stays for the next owner.
        close(descriptor)
    }
}
