import CSQLite

/// A commit hook's answer: let the commit proceed, or turn it into a rollback.
public enum CommitDecision: Sendable, Hashable {
    /// Let the transaction commit.
    case commit
    /// Roll the transaction back; COMMIT then fails with `SQLITE_CONSTRAINT_COMMITHOOK`.
    case rollback
}

final class CommitHookBox {
    let hook: () -> CommitDecision

    init(_ hook: @escaping () -> CommitDecision) {
        self.hook = hook
    }
}

final class WALHookBox {
    let hook: (Int) -> Void

    init(_ hook: @escaping (Int) -> Void) {
        self.hook = hook
    }
}

final class RollbackHookBox {
    let hook: () -> Void

    init(_ hook: @escaping () -> Void) {
        self.hook = hook
    }
}

extension Connection {
    /// Installs `hook`, called just before each transaction commits (nil removes it). The hook must not use the
    /// connection.
    public func setCommitHook(_ hook: (() -> CommitDecision)?) throws(SQLiteError) {
        let database = try openHandle()
        guard let hook else {
            sqlite3_commit_hook(database, nil, nil)
            commitHookBox = nil
            return
        }
        let box = CommitHookBox(hook)
        sqlite3_commit_hook(database, { context in
            guard let context else {
                return 0
            }
            let box = Unmanaged<CommitHookBox>.fromOpaque(context).takeUnretainedValue()
            return box.hook() == .commit ? 0 : 1
        }, Unmanaged.passUnretained(box).toOpaque())
        commitHookBox = box
    }

    /// Installs `hook`, called whenever a transaction rolls back (nil removes it). The hook must not use the
    /// connection.
    public func setRollbackHook(_ hook: (() -> Void)?) throws(SQLiteError) {
        let database = try openHandle()
        guard let hook else {
            sqlite3_rollback_hook(database, nil, nil)
            rollbackHookBox = nil
            return
        }
        let box = RollbackHookBox(hook)
        sqlite3_rollback_hook(database, { context in
            guard let context else {
                return
            }
            Unmanaged<RollbackHookBox>.fromOpaque(context).takeUnretainedValue().hook()
        }, Unmanaged.passUnretained(box).toOpaque())
        rollbackHookBox = box
    }

    /// Installs `hook`, called after each commit in WAL mode with the number of frames now in the log (nil
    /// removes it). It replaces the automatic checkpoint (`PRAGMA wal_autocheckpoint`), which is SQLite's own WAL
    /// hook: with a hook installed the connection no longer checkpoints by itself. The hook must not use the
    /// connection.
    public func setWALHook(_ hook: ((Int) -> Void)?) throws(SQLiteError) {
        let database = try openHandle()
        guard let hook else {
            sqlite3_wal_hook(database, nil, nil)
            walHookBox = nil
            return
        }
        let box = WALHookBox(hook)
        sqlite3_wal_hook(database, { context, _, _, frames in
            if let context {
                Unmanaged<WALHookBox>.fromOpaque(context).takeUnretainedValue().hook(Int(frames))
            }
            return SQLITE_OK
        }, Unmanaged.passUnretained(box).toOpaque())
        walHookBox = box
    }
}
