import Dispatch
import SQLiteKit
import Synchronization

/// WAL checkpoints beside a bulk apply instead of inside its commits.
///
/// SQLite checkpoints a WAL database in the connection that commits once the log passes 1000 pages: the commit
/// then also copies the log into the database file and syncs both. A rebuild writes a page of rows and its
/// receipt (about 1.3 MB for 1000 rows) per transaction, so every few pages the engine thread stopped to copy.
/// During a bulk apply (``ClientStore/beginBulkApply()``) the engine connection does not checkpoint; when a commit
/// leaves the log that long, this checkpointer runs a `PASSIVE` checkpoint on its own connection and thread,
/// which copies what no reader needs while the engine writes on (SQLite serializes checkpoints itself and a passive one never
/// waits). The next commit after a complete checkpoint restarts the log, as before. Nothing here is durable
/// state: an interrupted checkpoint is resumed by the next one.
final class WALCheckpointer: Sendable {
    private let path: String
    private let queue = DispatchQueue(label: "seedkit.wal-checkpoint", qos: .userInitiated)
    /// Whether a checkpoint waits to run, and whether the checkpointer is closed.
    private let flags = Mutex((scheduled: false, closed: false))
    /// The checkpointer's own connection, opened on first use; touched only on `queue`.
    private let connection = Mutex<Connection?>(nil)
    /// Checkpoints run so far.
    private let runs = Mutex(0)

    /// Checkpoints run so far (after ``drain()``, every one scheduled before it).
    var completed: Int { runs.withLock { $0 } }

    init(path: String) {
        self.path = path
    }

    /// Schedules one checkpoint unless one is already waiting to run.
    func schedule() {
        let start = flags.withLock { flags -> Bool in
            guard !flags.closed, !flags.scheduled else { return false }
            flags.scheduled = true
            return true
        }
        guard start else { return }
        queue.async { [self] in
            guard flags.withLock({ flags -> Bool in
                flags.scheduled = false
                return !flags.closed
            }) else { return }
            connection.withLock { connection in
                do {
                    if connection == nil {
                        let opened = try Connection(path: path, mode: .readWrite)
                        try opened.setBusyTimeout(milliseconds: 0)
                        connection = opened
                    }
                    _ = try connection?.checkpoint(.passive)
                    runs.withLock { $0 += 1 }
                } catch {
                    // A checkpoint that cannot run now is left to the next one, or to the engine's own.
                }
            }
        }
    }

    /// Waits for the checkpoints scheduled so far.
    func drain() {
        queue.sync {}
    }

    /// Waits for a checkpoint in progress, closes the connection and schedules nothing more.
    func close() {
        flags.withLock { $0.closed = true }
        queue.sync {}
        connection.withLock { connection in
            connection?.close()
            connection = nil
        }
    }
}
