import Dispatch
import Synchronization

/// WAL checkpoints beside a writer instead of inside its commits.
///
/// SQLite checkpoints a WAL database in the connection that commits once the log passes 1000 pages: the commit
/// then also copies the log into the database file and syncs both, while the writer (and whoever waits for it)
/// waits. A writer that installs ``committed(frames:threshold:)`` as its WAL hook (``Connection/setWALHook(_:)``)
/// no longer checkpoints; when a commit leaves the log that long, this checkpointer runs a `PASSIVE` checkpoint on
/// its own connection and thread, which copies what no reader needs while the writer goes on (SQLite serializes
/// checkpoints itself, and a passive one never waits). The next commit after a complete checkpoint restarts the
/// log, as before. Nothing here is durable state: an interrupted checkpoint is resumed by the next one. The client
/// uses it during a bulk apply (a rebuild), the reference server for every commit.
public final class WALCheckpointer: Sendable {
    private let path: String
    private let queue = DispatchQueue(label: "seedkit.wal-checkpoint", qos: .userInitiated)
    /// Whether a checkpoint waits to run, and whether the checkpointer is closed.
    private let flags = Mutex((scheduled: false, closed: false))
    /// The checkpointer's own connection, opened on first use; touched only on `queue`.
    private let connection = Mutex<Connection?>(nil)
    /// Checkpoints that copied frames so far.
    private let runs = Mutex(0)
    /// Frames in the log after the writer's last commit, as its WAL hook reported them, and how many times the log
    /// was seen to start over (a commit reporting fewer frames than the one before, or a bound wait).
    private let frames = Mutex(LogMark(frames: 0, restarts: 0))

    /// Times a writer waited for the checkpoint in a bound.
    private let waits = Mutex(0)

    /// Checkpoints that copied frames into the database so far (after ``drain()``, every one scheduled before it).
    public var completed: Int { runs.withLock { $0 } }

    /// Times a writer found the log at its limit and waited for the checkpoint (``bound(atFrames:)``,
    /// ``bound(atFrames:since:threshold:)``).
    public var boundWaits: Int { waits.withLock { $0 } }

    /// The log's length after the writer's last commit and the restarts seen so far: what
    /// ``bound(atFrames:since:threshold:)`` compares with.
    public var mark: LogMark { frames.withLock { $0 } }

    /// A checkpointer for the database file at `path`; its connection opens with the first checkpoint.
    public init(path: String) {
        self.path = path
    }

    /// Notes the log's length after a commit and schedules a checkpoint once it reaches `threshold` frames.
    public func committed(frames count: Int, threshold: Int) {
        frames.withLock { mark in
            if count < mark.frames { mark.restarts += 1 }
            mark.frames = count
        }
        if count >= threshold { schedule() }
    }

    /// Waits for the checkpoints in progress when the log has grown to `limit` frames or more. A checkpoint beside
    /// a writer that commits without pause copies the log but never lets it restart (the writer is always ahead
    /// of it), so the log would grow with everything written; after this wait the next write transaction finds it
    /// checkpointed and starts it over.
    public func bound(atFrames limit: Int) {
        guard frames.withLock({ $0.frames }) >= limit else { return }
        wait()
    }

    /// The bound for a writer whose work comes in units that each end with this call (a server's requests), taken
    /// with the ``mark`` from before the unit: waits for the checkpoint when the log is now at `limit` frames or
    /// more and was already at `threshold` frames before the unit, without starting over since. That log grew
    /// across units although a checkpoint was due, and waiting lets the next write restart it. A log that is long
    /// with the unit's own frames only is left to the checkpoint its commit scheduled, which usually ends before
    /// the next write; if not, the next unit waits. The log then stays within `limit` plus one unit's frames, and a
    /// unit that writes more than `limit` frames does not wait for its own checkpoint.
    public func bound(atFrames limit: Int, since start: LogMark, threshold: Int) {
        let grown = frames.withLock { now in
            now.frames >= limit && now.restarts == start.restarts && start.frames >= threshold
        }
        guard grown else { return }
        wait()
    }

    /// Waits for the checkpoint in progress or a new one; the next write transaction then restarts the log.
    private func wait() {
        waits.withLock { $0 += 1 }
        schedule()
        drain()
        frames.withLock { mark in
            mark.frames = 0
            mark.restarts += 1
        }
    }

    /// Schedules one checkpoint unless one is already waiting to run.
    public func schedule() {
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
                        // Reading the journal mode opens the database: until then the connection does not know
                        // it is in WAL mode and a checkpoint does nothing.
                        _ = try opened.scalar("PRAGMA journal_mode")
                        connection = opened
                    }
                    if let (_, copied) = try connection?.checkpoint(.passive), copied > 0 {
                        runs.withLock { $0 += 1 }
                    }
                } catch {
                    // A checkpoint that cannot run now is left to the next one, or to the writer's own.
                }
            }
        }
    }

    /// Holds every checkpoint back until ``resume()``: a test seam that shows what the writer's own commits do to
    /// the log. ``bound(atFrames:)``, ``drain()`` and ``close()`` wait for the resume.
    package func suspend() {
        queue.suspend()
    }

    /// Lets the checkpoints held back by ``suspend()`` run.
    package func resume() {
        queue.resume()
    }

    /// Waits for the checkpoints scheduled so far.
    public func drain() {
        queue.sync {}
    }

    /// Waits for a checkpoint in progress, closes the connection and schedules nothing more.
    public func close() {
        flags.withLock { $0.closed = true }
        queue.sync {}
        connection.withLock { connection in
            connection?.close()
            connection = nil
        }
    }
}

/// The WAL's length after a writer's last commit, and how many times the log started over before it.
public struct LogMark: Sendable, Equatable {
    /// Frames in the log after the last commit.
    public var frames: Int
    /// Restarts of the log seen so far.
    public var restarts: Int

    public init(frames: Int, restarts: Int) {
        self.frames = frames
        self.restarts = restarts
    }
}
