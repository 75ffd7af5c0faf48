import SQLiteKit
import SystemKit
import SynchroProtocol

/// The reference server's embedded SQLite database: opening, schema, metadata counters and the
/// initial load of a dataset. The store is used under the engine's lock only.
final class ServerStore {
    let db: any StoreExecutor
    /// Checkpoints the log beside the store's connection, which never checkpoints in its own commits (SQLite only).
    let checkpointer: WALCheckpointer?
    /// Frames a commit may leave in the log before a checkpoint is scheduled (`PRAGMA wal_autocheckpoint`).
    let checkpointFrames: Int

    /// Opens (creating and loading when new) the database at `path`.
    ///
    /// `checkpointFrames` replaces SQLite's automatic checkpoint threshold (1000 frames when nil): once a commit
    /// leaves that many frames in the log, ``checkpointer`` copies them on its own connection and thread, so a
    /// request that commits many pages (a rebuild's staging) no longer also copies the log and syncs the file.
    init(
        path: String, dataset: Dataset, rowsOverride: Int?, clock: any ServerClock, checkpointFrames: Int? = nil
    ) throws {
        if InitialStoreFile.isNewStore(at: path) {
            try InitialStoreFile.create(at: path) { connection in
                let loader = ServerStore(loading: connection)
                try loader.db.transaction {
                    try loader.db.execute(ServerSchema.script)
                    try connection.setUserVersion(ServerSchema.version)
                    try loader.initialize(dataset: dataset, rowsOverride: rowsOverride, clock: clock)
                    // After the rows: the triggers guard staged rebuild rows, of which a new store has none.
                    try loader.db.execute(ServerSchema.stagedRowTriggers)
                }
            }
        }
        // Private whatever the umask: the database holds the server's HMAC keys, credentials' effects and rows.
        if !path.hasPrefix("file:") && path != ":memory:" { try PrivateFiles.createIfMissing(path) }
        let connection = try Connection(path: path)
        db = SQLiteStoreExecutor(connection)
        try connection.setBusyTimeout(milliseconds: 5000)
        _ = try connection.setJournalMode(.wal)
        try connection.setSynchronous(.normal)
        if let checkpointFrames { try connection.execute("PRAGMA wal_autocheckpoint = \(max(1, checkpointFrames))") }
        let threshold = Int(max(1, try connection.scalar("PRAGMA wal_autocheckpoint")?.integerValue ?? 1000))
        let checkpointer = WALCheckpointer(path: path)
        self.checkpointer = checkpointer
        self.checkpointFrames = threshold
        try connection.setWALHook { frames in checkpointer.committed(frames: frames, threshold: threshold) }
        if try connection.userVersion() == 0 {
            try db.transaction {
                try db.execute(ServerSchema.script + ServerSchema.stagedRowTriggers)
                try connection.setUserVersion(ServerSchema.version)
                try initialize(dataset: dataset, rowsOverride: rowsOverride, clock: clock)
            }
        } else if let steps = ServerSchema.migrations[try connection.userVersion()] {
            try db.transaction {
                try db.execute(steps)
                try MembershipChunks.rebuildAll(store: self)
                try connection.setUserVersion(ServerSchema.version)
            }
        } else if try connection.userVersion() != ServerSchema.version {
            throw ServerStoreError.unsupportedLayout(try connection.userVersion())
        }
    }

    /// A store on the connection of a bulk load (``InitialStoreFile``): no checkpointer, the load's own pragmas.
    private init(loading connection: Connection) {
        db = SQLiteStoreExecutor(connection)
        checkpointer = nil
        checkpointFrames = 0
    }

    /// Connects to PostgreSQL with `connectionString` (libpq's URI or key/value form) and uses the server's schema
    /// there (``PostgresDialect/schemaName``), creating and loading it when absent, and installs upstream's export
    /// functions in schema `synchro` (``SeedExportFunctions``). Creation runs under the writer lock, so two
    /// processes starting on an empty database create and load it once.
    init(postgres connectionString: String, dataset: Dataset, rowsOverride: Int?, clock: any ServerClock) throws {
        db = try PostgresStoreExecutor(connectionString: connectionString)
        checkpointer = nil
        checkpointFrames = 0
        try db.transaction {
            try db.execute("CREATE SCHEMA IF NOT EXISTS \(PostgresDialect.schemaName)")
            let exists = try db.cachedStatement("SELECT to_regclass('server_meta') IS NOT NULL").scalar()
            if exists?.integerValue == 1 {
                var layout = try metaInteger(Self.layoutVersionKey)
                if layout == 2 {
                    try db.execute(PostgresDialect.translate(ServerSchema.migrationFrom2))
                    layout = 3
                }
                if layout == 3 {
                    try db.execute(PostgresDialect.schema(ServerSchema.migrationFrom3))
                    layout = 4
                    try setMeta(Self.layoutVersionKey, .integer(layout))
                }
                if layout == 4 {
                    try db.execute(PostgresDialect.translate(ServerSchema.migrationFrom4))
                    layout = 5
                    try setMeta(Self.layoutVersionKey, .integer(layout))
                }
                if layout == 5 {
                    // Layout 6 keeps digest chunks on SQLite only (``MembershipChunks``): nothing to change here.
                    layout = Int64(ServerSchema.version)
                    try setMeta(Self.layoutVersionKey, .integer(layout))
                }
                guard layout == Int64(ServerSchema.version) else {
                    throw ServerStoreError.unsupportedLayout(Int32(clamping: layout))
                }
            } else {
                try db.execute(PostgresDialect.schema(ServerSchema.script) + PostgresDialect.stagedRowTriggers)
                try setMeta(Self.layoutVersionKey, .integer(Int64(ServerSchema.version)))
                try initialize(dataset: dataset, rowsOverride: rowsOverride, clock: clock)
            }
            try SeedExportFunctions.install(store: self, dataset: dataset)
        }
        try KeptScopeDigests.keep(store: self)
    }

    /// Where a PostgreSQL store records its layout version (SQLite's is `PRAGMA user_version`).
    static let layoutVersionKey = "layout_version"

    deinit {
        checkpointer?.close()
    }

    /// How long the log may grow before the writer that made it that long waits for the checkpoint beside it:
    /// 8 times the checkpoint threshold (``SyncEngine/boundLog(since:)``).
    var logLimit: Int { 8 * checkpointFrames }

    // MARK: - Metadata

    func meta(_ key: String) throws -> SQLiteValue? {
        try db.cachedStatement("SELECT value FROM server_meta WHERE key = ?").scalar([.text(key)])
    }

    /// An integer of `server_meta`. Its `value` column is a blob; SQLite keeps an integer's storage class there,
    /// PostgreSQL's `bytea` holds the integer's decimal digits (``PostgresStoreExecutor``).
    func metaInteger(_ key: String) throws -> Int64 {
        switch try meta(key) {
        case .integer(let value): return value
        case .blob(let digits): return Int64(String(decoding: digits, as: UTF8.self)) ?? 0
        default: return 0
        }
    }

    func setMeta(_ key: String, _ value: SQLiteValue) throws {
        try db.cachedStatement("INSERT OR REPLACE INTO server_meta(key, value) VALUES (?, ?)").run([.text(key), value])
    }

    /// Increments and returns a counter kept in `server_meta`.
    func nextCounter(_ key: String) throws -> Int64 {
        let next = try metaInteger(key) + 1
        try setMeta(key, .integer(next))
        return next
    }

    /// A new opaque server version (printable ASCII, at most 64 octets: `spec/wire-protocol.md` §2.8).
    func nextServerVersion() throws -> String {
        "v\(try nextCounter("version_counter"))"
    }

    /// The 32-octet HMAC key for `purpose`, created with the database so tokens survive restarts.
    func key(_ purpose: String) throws -> [UInt8] {
        guard let bytes = try meta("key:\(purpose)")?.blobValue, bytes.count == 32 else {
            throw ServerStoreError.missingKey(purpose)
        }
        return bytes
    }

    // MARK: - Manifests

    /// The active manifest (highest version).
    func currentManifest() throws -> SchemaManifest {
        guard let bytes = try db.cachedStatement("SELECT manifest FROM manifests ORDER BY version DESC LIMIT 1")
            .scalar()?.blobValue
        else { throw ServerStoreError.noManifest }
        return try SchemaManifest(bytes: bytes)
    }

    /// A stored manifest by exact reference, or nil when the server never published it.
    func manifest(_ reference: SchemaReference) throws -> (SchemaManifest, transitionClass: String)? {
        let row = try db.cachedStatement("SELECT manifest, transition_class FROM manifests WHERE version = ? AND hash = ?")
            .rows([.integer(reference.version), .text(reference.hash)]).first
        guard let row, let bytes = row[0].blobValue, let transition = row[1].textValue else { return nil }
        return (try SchemaManifest(bytes: bytes), transition)
    }

    func insertManifest(_ manifest: SchemaManifest, json: JSONValue, affectedScopes: [String]) throws {
        let affected = try CanonicalJSON.encode(.array(affectedScopes.map(JSONValue.string)))
        try db.cachedStatement(
            "INSERT INTO manifests(version, hash, manifest, transition_class, affected_scopes) VALUES (?, ?, ?, ?, ?)"
        ).run([
            .integer(manifest.schemaVersion), .text(manifest.schemaHash), .blob(try CanonicalJSON.encode(json)),
            .text(manifest.transitionClass.rawValue), .text(String(decoding: affected, as: UTF8.self)),
        ])
    }

    // MARK: - Initial load

    private func initialize(dataset: Dataset, rowsOverride: Int?, clock: any ServerClock) throws {
        var random = SystemRandomNumberGenerator()
        for purpose in ServerKeyPurpose.allCases {
            let key = (0..<32).map { _ in UInt8.random(in: 0...255, using: &random) }
            try setMeta("key:\(purpose.rawValue)", .blob(key))
        }
        for name in ["stream_generation", "membership_generation", "retention_generation", "registry_generation"] {
            try setMeta(name, .integer(1))
        }
        try setMeta("created_us", .integer(clock.nowMicroseconds()))
        var manifestJSON = dataset.manifestJSON
        if case .object(let o) = manifestJSON, o["schema_hash"] == nil {
            manifestJSON = .object(JSONObject(o.members + [JSONMember("schema_hash", .string(dataset.manifest.schemaHash))]))
        }
        try insertManifest(dataset.manifest, json: manifestJSON, affectedScopes: [])
        try loadRows(dataset: dataset, rowsOverride: rowsOverride)
        try ScopeCardinality.recountAll(store: self)
        if MembershipChunks.kept(in: self) {
            // After the rows: the triggers that mark chunks dirty do not run per loaded row; the chunks are built
            // once, in key order.
            try db.execute(MembershipChunks.layout)
            try MembershipChunks.rebuildAll(store: self)
        }
    }

    /// Loads every generated row as already materialized at the stream's generation start: rebuild
    /// serves it; no stream entries are needed because every client starts with a rebuild.
    ///
    /// Rows go to the store in batches (``InitialLoadBatch``) and the version counter is read and written once,
    /// not per row: on PostgreSQL each statement is a round trip, and a per-row load of 100,000 rows took longer
    /// than 20 minutes. The versions are the ones ``nextServerVersion()`` would have issued one by one.
    private func loadRows(dataset: Dataset, rowsOverride: Int?) throws {
        let generator = DatasetGenerator(dataset: dataset)
        var digester = RowDigester(manifest: dataset.manifest)
        var counter = try metaInteger("version_counter")
        var batch = InitialLoadBatch(db: db)
        for table in dataset.manifest.tables {
            for (pk, row) in try generator.rows(for: table.tableID, rowsOverride: rowsOverride) {
                counter += 1
                let version = "v\(counter)"
                let (identity, digest) = try digester.digest(
                    tableID: table.tableID, primaryKey: pk, row: row, serverVersion: version)
                try batch.append(
                    identity: identity.bytes, tableID: table.tableID, pk: try CanonicalJSON.encode(pk),
                    row: try CanonicalJSON.encode(row), version: version, digest: digest,
                    scopes: dataset.scopes(forTable: table.tableID, row: row))
            }
        }
        try batch.flush()
        try setMeta("version_counter", .integer(counter))
    }
}

/// The rows of the initial load not yet written: `source_rows`, `projection` (live, with its digest) and one
/// `membership` edge per scope (with the row's digest: layout 3), flushed together every ``capacity`` rows through ``StoreExecutor/insertRows``.
struct InitialLoadBatch {
    static let capacity = 2000

    let db: any StoreExecutor
    private var sources: [[SQLiteValue]] = []
    private var projections: [[SQLiteValue]] = []
    private var memberships: [[SQLiteValue]] = []

    init(db: any StoreExecutor) {
        self.db = db
    }

    mutating func append(
        identity: [UInt8], tableID: String, pk: [UInt8], row: [UInt8], version: String, digest: [UInt8],
        scopes: [String]
    ) throws {
        sources.append([.blob(identity), .text(tableID), .blob(pk), .blob(row), .text(version), .integer(0)])
        projections.append([
            .blob(identity), .text(tableID), .blob(pk), .blob(row), .text(version), .blob(digest), .integer(0),
        ])
        for scope in scopes { memberships.append([.text(scope), .blob(identity), .blob(digest)]) }
        if sources.count >= Self.capacity { try flush() }
    }

    mutating func flush() throws {
        CrashPoint.reached("server.load.batch")
        try db.insertRows(
            into: "source_rows", columns: ["identity", "table_id", "pk", "row", "server_version", "state"], sources)
        try db.insertRows(
            into: "projection",
            columns: ["identity", "table_id", "pk", "row", "server_version", "row_digest", "state"], projections)
        try db.insertRows(into: "membership", columns: ["scope_id", "identity", "row_digest"], memberships)
        sources.removeAll(keepingCapacity: true)
        projections.removeAll(keepingCapacity: true)
        memberships.removeAll(keepingCapacity: true)
    }
}

/// The independent HMAC keys of the server (`spec/integrity.md` §7.2: seed keys differ from cursor keys).
enum ServerKeyPurpose: String, CaseIterable {
    case pullCursor = "synchro:v3:pull-cursor:v1"
    case rebuildContinuation = "synchro:v3:rebuild-continuation:v1"
    case seedPage = "synchro:v3:seed-page:v1"
    case seedContinuation = "synchro:v3:seed-continuation:v1"
}

/// Why the store cannot be used.
enum ServerStoreError: Error, CustomStringConvertible {
    case unsupportedLayout(Int32)
    case missingKey(String)
    case noManifest
    /// Another process is loading the new store at the same path (``InitialStoreFile``).
    case loadInProgress

    var description: String {
        switch self {
        case .unsupportedLayout(let v): "the database has layout version \(v), this server expects \(ServerSchema.version)"
        case .missingKey: "the database lacks a token key"
        case .noManifest: "the database holds no manifest"
        case .loadInProgress: "another process is loading the new database at this path; start again when it is done"
        }
    }
}
