import SynchroProtocol

/// Everything a reference server instance is started with.
public struct ServerConfiguration: Sendable {
    /// The dataset served: manifest, scope declarations, generated rows.
    public var dataset: Dataset
    /// Replaces the row count of the dataset's overridable (large portable) table.
    public var rowsOverride: Int?
    /// The SQLite database file; created and loaded when absent. Unused when ``postgresStore`` is set.
    public var databasePath: String
    /// A libpq connection string (`postgresql://…` or `key=value` pairs): when set, the server keeps its state in
    /// that PostgreSQL database (schema `seedkit_server`, created and loaded when absent) instead of SQLite, and
    /// other server processes may serve the same database.
    public var postgresStore: String?
    /// Bearer credentials: secret → user identity.
    public var credentials: [String: String]
    /// The operator credential for `/operator/…` routes; nil disables them.
    public var operatorToken: String?
    public var clock: any ServerClock
    /// Connects with an `app_version` below this get 426 `upgrade_required`.
    public var minimumClientVersion: SemanticVersion?
    /// When accepted writes become pull-visible.
    public var materialization: MaterializationMode
    /// The `Retry-After` value sent on every 429 and 503, in seconds (upstream sends 5).
    public var retryAfterSeconds: Int
    /// Frames a commit may leave in the WAL before a checkpoint runs beside the server (`PRAGMA
    /// wal_autocheckpoint`; SQLite's 1000 when nil). Tests lower it to see checkpoints with little data.
    public var checkpointFrames: Int?
    /// Failed credential checks one client address may make per window before it is answered `429` with
    /// `Retry-After` (``FailedAuthentications``); nil sets no limit.
    public var failedAuthenticationLimit: FailedAuthenticationLimit? = FailedAuthenticationLimit()

    public init(
        dataset: Dataset, rowsOverride: Int? = nil, databasePath: String, credentials: [String: String],
        operatorToken: String? = nil, clock: any ServerClock = SystemServerClock(),
        minimumClientVersion: SemanticVersion? = nil, materialization: MaterializationMode = .immediate,
        retryAfterSeconds: Int = 5
    ) {
        self.dataset = dataset
        self.rowsOverride = rowsOverride
        self.databasePath = databasePath
        self.credentials = credentials
        self.operatorToken = operatorToken
        self.clock = clock
        self.minimumClientVersion = minimumClientVersion
        self.materialization = materialization
        self.retryAfterSeconds = retryAfterSeconds
    }
}

/// How the capture log becomes the pull-visible stream.
public enum MaterializationMode: Sendable, Equatable {
    /// Right after every committed write (still a separate step, so `capture_pending` exists).
    case immediate
    /// Only when ``SyncEngine/materialize()`` is called: tests schedule visibility exactly.
    case manual
    /// By a background worker every `interval`: a write becomes pull-visible within about one
    /// interval, and its author meets `capture_pending` until then, as with a lagging WAL consumer.
    case background(interval: Duration)
}
