import Glibc
import SQLiteKit
import SystemKit

/// The first file of a SQLite store, built as a bulk load: in a file of its own beside the destination
/// (`NAME.loading`), with no rollback journal, no syncs and a large page cache, then synced and put in place in one
/// step. Until that step the destination does not exist, so a process killed during the load leaves no store at all,
/// only the partial file, which the next start discards before loading again (docs/decisions.md, "The first load of
/// a SQLite store is a bulk load into a file of its own").
///
/// Why not the store's own transaction: a load of millions of rows in one WAL transaction writes every page twice
/// (log, then checkpoint) and, with SQLite's default 2 MB cache, rewrites the b-trees' upper pages into the log again
/// and again; the rows themselves are the same (``ServerStore``'s loader runs unchanged in both).
enum InitialStoreFile {
    /// The page cache of the load: the three row tables are appended in key order, so this bounds only how often an
    /// interior page is written again, and the server's memory during a load (the process is not yet serving).
    static let cacheKibibytes = 131_072

    /// Whether `path` names an ordinary file that may be bulk-built (not `:memory:` nor a `file:` URI, which keep the
    /// load in the store's own transaction), and holds no store yet: absent, or empty (an empty file is a new SQLite
    /// database).
    static func isNewStore(at path: String) -> Bool {
        guard !path.hasPrefix("file:"), path != ":memory:" else { return false }
        return !FileSystem.exists(path) || (FileSystem.isRegularFile(path) && FileSystem.size(of: path) == 0)
    }

    /// The partial file of a load in progress, or left by a process killed during one.
    static func loadingPath(_ path: String) -> String { path + ".loading" }

    /// The lock that makes one process the loader of `path`; removed when the store is in place.
    static func lockPath(_ path: String) -> String { path + ".loading-lock" }

    /// Builds the store at `path` when it holds none yet: `load` fills a fresh connection (journal off, no syncs)
    /// inside one transaction; the file is then synced and linked into place (or renamed over an empty file). Another
    /// process loading the same store is refused (``ServerStoreError/loadInProgress``); a partial file of a killed
    /// load is removed first.
    static func create(at path: String, load: (Connection) throws -> Void) throws {
        let lock: AdvisoryLock
        do throws(AdvisoryLock.Failure) {
            lock = try AdvisoryLock(path: lockPath(path))
        } catch {
            if case .held = error { throw ServerStoreError.loadInProgress }
            throw error
        }
        // Another process may have finished the same load between the caller's check and the lock.
        guard isNewStore(at: path) else { return }
        let partial = loadingPath(path)
        try FileSystem.removeFamily(partial, suffixes: ["-journal", "-wal", "-shm"])
        try PrivateFiles.createIfMissing(partial)
        do {
            let connection = try Connection(path: partial)
            _ = try connection.setJournalMode(.off)
            try connection.setSynchronous(.off)
            try connection.execute("PRAGMA cache_size = -\(cacheKibibytes)")
            try connection.execute("PRAGMA locking_mode = EXCLUSIVE")
            try load(connection)
            connection.close()
            CrashPoint.reached("server.load.before-publish")
            try FileSystem.sync(partial)
            if FileSystem.exists(path) {
                try FileSystem.rename(partial, to: path)
            } else if link(partial, path) == 0 {
                unlink(partial)
            } else {
                throw SystemError.last("link", path: path)
            }
            syncDirectory(of: path)
        } catch {
            try? FileSystem.removeFamily(partial, suffixes: ["-journal", "-wal", "-shm"])
            throw error
        }
        // A process that opened the lock file before this removal re-checks the store after taking the lock.
        unlink(lockPath(path))
        withExtendedLifetime(lock) {}
    }

    /// The new directory entry survives a crash once the directory is synced (best effort, as for published files).
    private static func syncDirectory(of path: String) {
        let directory = FileSystem.split(path).directory
        let handle = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard handle >= 0 else { return }
        _ = fsync(handle)
        close(handle)
    }
}
