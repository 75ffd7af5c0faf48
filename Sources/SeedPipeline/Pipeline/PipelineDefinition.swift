import SeedSources

/// A validated pipeline definition (`pipelines/*.json`, docs/pipelines.md): where the rows come from, what is
/// exported, how it is packed and rehearsed, where it is published and which steps run. Only
/// ``load(file:environment:)`` and ``init(bytes:baseDirectory:environment:)`` make one, so a value is always valid;
/// paths are absolute and credentials are resolved from the environment.
public struct PipelineDefinition: Sendable {
    /// The `name` member, or the file name without `.json`.
    public let name: String
    /// The directory relative paths were resolved against (the pipeline file's directory).
    public let baseDirectory: String
    public let source: PipelineSource
    /// The portable scopes to export; nil exports every portable scope the source declares.
    public let scopes: [String]?
    /// Rows per export page and per rehearsal pull page, 1…1000.
    public let pageLimit: Int64
    /// The zstd level of `seed.db.zst`, 1…22.
    public let packLevel: Int32
    public let rehearsal: PipelineRehearsal
    /// The directory that receives `seed.db`, `seed.db.zst`, `evidence.json` and `SHA256SUMS` (absolute).
    public let publishDirectory: String
    /// The steps that run, in run order.
    public let steps: [PipelineStep]
    /// Where the `sign` step takes the private key from; nil when the pipeline does not sign.
    public let signingKey: PipelineSigningKey?
    /// The pipeline file's name and SHA-256, recorded in the provenance (nil for a definition given as bytes).
    public internal(set) var file: (name: String, sha256: String)?

    /// Whether `step` is part of this pipeline.
    public func runs(_ step: PipelineStep) -> Bool {
        steps.contains(step)
    }

    init(
        name: String, baseDirectory: String, source: PipelineSource, scopes: [String]?, pageLimit: Int64,
        packLevel: Int32, rehearsal: PipelineRehearsal, publishDirectory: String, steps: [PipelineStep],
        signingKey: PipelineSigningKey?
    ) {
        self.name = name
        self.baseDirectory = baseDirectory
        self.source = source
        self.scopes = scopes
        self.pageLimit = pageLimit
        self.packLevel = packLevel
        self.rehearsal = rehearsal
        self.publishDirectory = publishDirectory
        self.steps = steps
        self.signingKey = signingKey
    }
}

/// Where a pipeline's signing key comes from (`sign` member): never printed, never written into an artifact.
public enum PipelineSigningKey: Sendable, CustomStringConvertible {
    /// A PEM file of mode 0600 (absolute path), read by the `sign` step.
    case file(String)
    /// An environment variable holding the PEM text, read when the definition is loaded.
    case environment(PipelineCredential)

    public var description: String {
        switch self {
        case .file(let path): path
        case .environment(let credential): credential.description
        }
    }
}

/// Where a pipeline's rows come from.
public enum PipelineSource: Sendable {
    /// The reference server, started in-process on loopback for the run, serving a dataset.
    case embedded(dataset: String, rows: Int?)
    /// A running protocol 3 server with the operator export routes.
    case server(PipelineServerSource)
    /// Upstream's export functions in a PostgreSQL database.
    case postgresql(PipelinePostgresSource)
    /// A delta-sync API described by a delta source definition (docs/delta-sources.md); its run path is
    /// ``PipelineDeltaRun``.
    case delta(PipelineDeltaSource)

    /// `embedded`, `server` or `postgresql`.
    public var kind: String {
        switch self {
        case .embedded: "embedded"
        case .server: "server"
        case .postgresql: "postgresql"
        case .delta: "delta"
        }
    }
}

/// A PostgreSQL source: the libpq connection string (without a password: libpq reads it from `PGPASSWORD` or
/// `~/.pgpass`) and, for the rehearsal, the protocol server that serves the same database.
public struct PipelinePostgresSource: Sendable {
    /// A `postgresql://` URI or `key=value` list, as libpq reads it.
    public let connection: String
    /// `http(s)://host[:port]` of the protocol server the rehearsal syncs with; nil when the pipeline does not
    /// rehearse.
    public let serverURL: String?
    /// The rehearsal user's credential; nil when the pipeline does not rehearse.
    public let userToken: PipelineCredential?
}

/// A delta source: the definition file (`source.delta.definition`, resolved against the pipeline file's directory),
/// parsed and validated when the pipeline is loaded, and its bearer credential when the variable it names is set.
public struct PipelineDeltaSource: Sendable {
    /// The definition file (absolute).
    public let definitionPath: String
    /// Lowercase hex SHA-256 of the definition file's bytes: part of the reuse rule's inputs.
    public let definitionSHA256: String
    /// The definition, with `source.delta.base_url` in place of its own when given.
    public let definition: DeltaSourceDefinition
    /// `source.delta.base_url`: replaces the definition's `base_url` (nil: the definition's own).
    public let baseURLOverride: String?
    /// The bearer credential from the variable `auth.bearer_env` names; nil when the definition names none or the
    /// variable is unset (a run then fails its export with `missing_credential`, a dry run its `bearer` check).
    public let bearer: PipelineCredential?
}

/// A server source: its URL and the credentials read from the environment variables the file names.
public struct PipelineServerSource: Sendable {
    /// `http(s)://host[:port]`, without credentials, query or fragment.
    public let url: String
    /// The operator credential of the export routes.
    public let operatorToken: PipelineCredential
    /// The rehearsal user's credential; nil when the pipeline does not rehearse.
    public let userToken: PipelineCredential?
}

/// Who the rehearsal syncs as.
public struct PipelineRehearsal: Sendable {
    /// The test user. The embedded source creates a credential for it; a server source authenticates with the
    /// user token and records `user` as a label only (nil when the file gives none).
    public let user: String?
    /// Also rebuild every portable scope from the server into a fresh store and compare digests.
    public let rebuildCompare: Bool
    /// `app_version` of the rehearsal device (SemVer).
    public let appVersion: String
}

/// A secret read from the environment. Its description never shows the value.
public struct PipelineCredential: Sendable, CustomStringConvertible {
    /// The environment variable it came from.
    public let variable: String
    /// The secret itself; hand it to a transport, never to output.
    public let value: String

    public var description: String { "$\(variable) (hidden)" }
}
