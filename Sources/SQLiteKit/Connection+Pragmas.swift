import CSQLite

extension Connection {
    /// A rollback-journal or WAL mode (`PRAGMA journal_mode`).
    public enum JournalMode: String, Sendable, Hashable, CaseIterable {
        /// Rollback journal deleted at commit: the mode published seeds carry (opens from read-only media).
        case delete
        /// Rollback journal truncated at commit.
        case truncate
        /// Rollback journal header zeroed at commit.
        case persist
        /// Rollback journal in memory (also what an in-memory database reports).
        case memory
        /// Write-ahead log: the mode of the engine connection on devices.
        case wal
        /// No journal.
        case off
    }

    /// How often SQLite waits for data to reach the disk (`PRAGMA synchronous`).
    public enum SynchronousMode: Int64, Sendable, Hashable, CaseIterable {
        /// Never syncs.
        case off = 0
        /// Syncs at critical moments; durable enough in WAL mode.
        case normal = 1
        /// Syncs at every commit.
        case full = 2
        /// Like full, and also syncs the directory after unlinking a rollback journal.
        case extra = 3
    }

    /// How a WAL checkpoint treats readers and writers (`sqlite3_wal_checkpoint_v2`).
    public enum CheckpointMode: Sendable, Hashable {
        /// Copies what it can without waiting.
        case passive
        /// Waits for writers, then copies every frame.
        case full
        /// Like full, then waits for readers so the next writer restarts the log.
        case restart
        /// Like restart, then truncates the `-wal` file to zero bytes (what the engine runs before closing).
        case truncate
    }

    /// One column as `PRAGMA table_info` describes it.
    public struct ColumnInfo: Sendable, Hashable {
        /// The column name as declared.
        public let name: String
        /// The declared type text (`TEXT`, `INTEGER`, or empty when none was declared).
        public let declaredType: String
        /// Whether the column is declared NOT NULL.
        public let isNotNull: Bool
        /// The DEFAULT expression as written in the schema, or nil.
        public let defaultSQL: String?
        /// The 1-based position in the primary key, or 0 when the column is not part of it.
        public let primaryKeyPosition: Int

        /// Creates a description of one column.
        public init(name: String, declaredType: String, isNotNull: Bool, defaultSQL: String?,
                    primaryKeyPosition: Int) {
            self.name = name
            self.declaredType = declaredType
            self.isNotNull = isNotNull
            self.defaultSQL = defaultSQL
            self.primaryKeyPosition = primaryKeyPosition
        }

        /// Whether the column is part of the primary key.
        public var isPrimaryKey: Bool {
            primaryKeyPosition > 0
        }
    }

    /// The journal mode of the main database as SQLite reports it.
    public func journalMode() throws(SQLiteError) -> JournalMode {
        try parseJournalMode(scalar("PRAGMA journal_mode"))
    }

    /// Asks for `mode` and returns the mode SQLite reports afterwards, which differs when the request could not
    /// be honoured (an in-memory database stays `memory`; a read-only one keeps its mode).
    @discardableResult
    public func setJournalMode(_ mode: JournalMode) throws(SQLiteError) -> JournalMode {
        try parseJournalMode(scalar("PRAGMA journal_mode = \(mode.rawValue)"))
    }

    /// The current `PRAGMA synchronous` setting.
    public func synchronous() throws(SQLiteError) -> SynchronousMode {
        let value = try scalar("PRAGMA synchronous")?.integerValue
        guard let value, let mode = SynchronousMode(rawValue: value) else {
            throw SQLiteError.refusal(.unexpectedPragmaResult(pragma: "synchronous"))
        }
        return mode
    }

    /// Sets `PRAGMA synchronous`.
    public func setSynchronous(_ mode: SynchronousMode) throws(SQLiteError) {
        try execute("PRAGMA synchronous = \(mode.rawValue)")
    }

    /// Whether foreign key constraints are enforced.
    public func foreignKeysEnabled() throws(SQLiteError) -> Bool {
        try scalar("PRAGMA foreign_keys")?.integerValue == 1
    }

    /// Turns foreign key enforcement on or off and returns the effective setting: SQLite ignores the change
    /// inside a transaction, so callers that must be sure compare the result.
    @discardableResult
    public func setForeignKeys(_ enabled: Bool) throws(SQLiteError) -> Bool {
        try execute("PRAGMA foreign_keys = \(enabled ? "ON" : "OFF")")
        return try foreignKeysEnabled()
    }

    /// `PRAGMA user_version` of the main database.
    public func userVersion() throws(SQLiteError) -> Int32 {
        Int32(truncatingIfNeeded: try scalar("PRAGMA user_version")?.integerValue ?? 0)
    }

    /// Sets `PRAGMA user_version` of the main database.
    public func setUserVersion(_ version: Int32) throws(SQLiteError) {
        try execute("PRAGMA user_version = \(version)")
    }

    /// The rows of `PRAGMA integrity_check` (every attached database): exactly `["ok"]` for a sound database,
    /// otherwise one line per problem.
    public func integrityCheck() throws(SQLiteError) -> [String] {
        try integrityCheck(.full)
    }

    /// What an integrity check covers.
    public enum IntegrityCheckScope: Sendable, Equatable {
        /// `PRAGMA integrity_check` of every attached database.
        case full
        /// `PRAGMA main.quick_check`: every b-tree's structure, the page accounting, NOT NULL and CHECK constraints,
        /// but not whether each index holds exactly its table's rows, nor UNIQUE.
        case quick
        /// `PRAGMA main.integrity_check(table)`: every check of `full` that concerns this table and its indexes,
        /// without the page accounting of the file.
        case table(String)
    }

    /// The rows of the integrity check `scope`: exactly `["ok"]` when it finds nothing, otherwise one line per
    /// problem.
    public func integrityCheck(_ scope: IntegrityCheckScope) throws(SQLiteError) -> [String] {
        let sql = switch scope {
        case .full: "PRAGMA integrity_check"
        case .quick: "PRAGMA main.quick_check"
        case .table(let name): "PRAGMA main.integrity_check(\(SQLiteIdentifier.quote(name)))"
        }
        return try prepare(sql).rows().map { row in
            row.first?.textValue ?? ""
        }
    }

    /// Whether an ordinary or virtual table named `name` exists in `schema` (names compare case-insensitively,
    /// as SQLite resolves them). Views do not count.
    public func tableExists(_ name: String, schema: String = "main") throws(SQLiteError) -> Bool {
        let sql = "SELECT count(*) FROM pragma_table_list(?1) WHERE schema = ?2 COLLATE NOCASE"
            + " AND type IN ('table', 'virtual')"
        let count = try scalar(sql, [.text(name), .text(schema)])?.integerValue ?? 0
        return count > 0
    }

    /// The columns of table (or view) `table` in declaration order; empty when there is no such table.
    public func columns(of table: String, schema: String = "main") throws(SQLiteError) -> [ColumnInfo] {
        let sql = "SELECT name, type, \"notnull\", dflt_value, pk FROM pragma_table_info(?1, ?2) ORDER BY cid"
        let statement = try prepare(sql)
        try statement.bind([.text(table), .text(schema)])
        defer { statement.reset() }
        var columns: [ColumnInfo] = []
        while try statement.step() {
            columns.append(ColumnInfo(
                name: try statement.text(at: 0),
                declaredType: try statement.text(at: 1),
                isNotNull: statement.int64(at: 2) != 0,
                defaultSQL: statement.isNull(at: 3) ? nil : try statement.text(at: 3),
                primaryKeyPosition: statement.int(at: 4)
            ))
        }
        return columns
    }

    /// Runs a WAL checkpoint of the main database and returns the log size and the frames copied, in frames.
    @discardableResult
    public func checkpoint(_ mode: CheckpointMode = .passive) throws(SQLiteError)
        -> (logFrames: Int, checkpointedFrames: Int) {
        let database = try openHandle()
        let sqliteMode = switch mode {
        case .passive: SQLITE_CHECKPOINT_PASSIVE
        case .full: SQLITE_CHECKPOINT_FULL
        case .restart: SQLITE_CHECKPOINT_RESTART
        case .truncate: SQLITE_CHECKPOINT_TRUNCATE
        }
        var logFrames: Int32 = 0
        var checkpointedFrames: Int32 = 0
        let resultCode = sqlite3_wal_checkpoint_v2(database, "main", sqliteMode, &logFrames, &checkpointedFrames)
        guard resultCode == SQLITE_OK else {
            throw SQLiteError(resultCode: resultCode, database: database)
        }
        return (Int(logFrames), Int(checkpointedFrames))
    }

    private func parseJournalMode(_ value: SQLiteValue?) throws(SQLiteError) -> JournalMode {
        guard let text = value?.textValue, let mode = JournalMode(rawValue: text.lowercased()) else {
            throw SQLiteError.refusal(.unexpectedPragmaResult(pragma: "journal_mode"))
        }
        return mode
    }
}
