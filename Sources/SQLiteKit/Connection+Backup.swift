import CSQLite

extension Connection {
    /// Copies the whole main database into `destination`'s main database with the online backup API
    /// (`sqlite3_backup`), replacing its content. This is how a consistent copy of a live or seed database
    /// is taken without copying files underneath SQLite.
    ///
    /// The copy includes the file header, so a WAL-mode source yields a WAL-mode destination: set the
    /// destination's journal mode afterwards when it must differ (published seeds use `delete`).
    public func backup(to destination: Connection) throws(SQLiteError) {
        let source = try openHandle()
        let target = try destination.openHandle()
        guard let backup = sqlite3_backup_init(target, "main", source, "main") else {
            throw SQLiteError(resultCode: sqlite3_errcode(target), database: target)
        }
        let stepped = sqlite3_backup_step(backup, -1)
        // sqlite3_backup_finish stores any failure on the destination connection, where the message is read.
        let finished = sqlite3_backup_finish(backup)
        if stepped != SQLITE_DONE {
            throw SQLiteError(resultCode: stepped, database: target)
        }
        if finished != SQLITE_OK {
            throw SQLiteError(resultCode: finished, database: target)
        }
    }

    /// Copies the main database into the file at `path`, created when missing and overwritten otherwise.
    public func backup(toPath path: String) throws(SQLiteError) {
        let destination = try Connection(path: path, mode: .readWriteCreate)
        defer { destination.close() }
        try backup(to: destination)
    }
}
