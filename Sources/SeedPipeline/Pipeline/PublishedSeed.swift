import SynchroProtocol

/// What a publication holds, read back from its `evidence.json`: what a device installing it gets.
public struct PublishedSeed: Sendable {
    /// One published file.
    public struct File: Sendable, Equatable {
        public let name: String
        public let bytes: Int64
        public let sha256: String
    }

    /// One portable scope the seed carries.
    public struct Scope: Sendable, Equatable {
        public let id: String
        public let cardinality: Int64
        /// The scope checksum (lowercase hex SHA-256).
        public let checksum: String
    }

    /// The publish directory.
    public let directory: String
    public let schemaVersion: Int64
    public let schemaHash: String
    public let rows: Int64
    public let scopes: [Scope]
    /// `seed.db` and `seed.db.zst` (when packed), as the evidence records them.
    public let files: [File]

    /// The `format` of a delta publication's evidence (``PipelineDeltaRun``): it has `entities` where a Synchro
    /// seed's has `schema` and `scopes`.
    static let deltaEvidenceFormat = "seedkit-delta-evidence/1"

    /// Reads the members of `evidence` that ``SeedEvidence`` writes; nil when one is missing or mistyped. A delta
    /// publication's evidence gives one ``Scope`` per entity type (its name, rows and digest), schema version 0 and
    /// an empty schema hash: a delta API has no schema manifest.
    init?(evidence: JSONValue, directory: String) {
        if evidence.objectValue?["format"]?.stringValue == Self.deltaEvidenceFormat {
            guard let seed = Self.delta(evidence: evidence, directory: directory) else { return nil }
            self = seed
            return
        }
        guard let object = evidence.objectValue, let rows = object["rows"]?.numberValue?.exactInt64,
              let schema = object["schema"]?.objectValue, let version = schema["version"]?.numberValue?.exactInt64,
              let hash = schema["hash"]?.stringValue, let scopes = object["scopes"]?.arrayValue,
              let artifacts = object["artifacts"]?.arrayValue
        else { return nil }
        var parsedScopes: [Scope] = []
        for scope in scopes {
            guard let scope = scope.objectValue, let id = scope["id"]?.stringValue,
                  let cardinality = scope["cardinality"]?.numberValue?.exactInt64,
                  let checksum = scope["checksum"].flatMap({ try? Checksum(json: $0) })
            else { return nil }
            parsedScopes.append(Scope(id: id, cardinality: cardinality, checksum: checksum.hex))
        }
        guard let files = Self.files(artifacts) else { return nil }
        self.directory = directory
        self.schemaVersion = version
        self.schemaHash = hash
        self.rows = rows
        self.scopes = parsedScopes
        self.files = files
    }

    private init(
        directory: String, schemaVersion: Int64, schemaHash: String, rows: Int64, scopes: [Scope], files: [File]
    ) {
        self.directory = directory
        self.schemaVersion = schemaVersion
        self.schemaHash = schemaHash
        self.rows = rows
        self.scopes = scopes
        self.files = files
    }

    private static func delta(evidence: JSONValue, directory: String) -> PublishedSeed? {
        guard let object = evidence.objectValue, let rows = object["rows"]?.numberValue?.exactInt64,
              let entities = object["entities"]?.arrayValue, let artifacts = object["artifacts"]?.arrayValue,
              let files = Self.files(artifacts)
        else { return nil }
        var scopes: [Scope] = []
        for entity in entities {
            guard let entity = entity.objectValue, let name = entity["entity"]?.stringValue,
                  let count = entity["rows"]?.numberValue?.exactInt64, let digest = entity["digest"]?.stringValue
            else { return nil }
            scopes.append(Scope(id: name, cardinality: count, checksum: digest))
        }
        return PublishedSeed(
            directory: directory, schemaVersion: 0, schemaHash: "", rows: rows, scopes: scopes, files: files)
    }

    private static func files(_ artifacts: [JSONValue]) -> [File]? {
        var files: [File] = []
        for artifact in artifacts {
            guard let artifact = artifact.objectValue, let name = artifact["name"]?.stringValue,
                  let bytes = artifact["bytes"]?.numberValue?.exactInt64, let sha256 = artifact["sha256"]?.stringValue
            else { return nil }
            files.append(File(name: name, bytes: bytes, sha256: sha256))
        }
        return files
    }

    /// `{"directory":…,"files":[…],"rows":…,"schema":{…},"scopes":[…]}`.
    public var json: JSONValue {
        .object(JSONObject([
            JSONMember("directory", .string(directory)),
            JSONMember("rows", PipelineJSON.integer(rows)),
            JSONMember("schema", .object(JSONObject([
                JSONMember("version", PipelineJSON.integer(schemaVersion)), JSONMember("hash", .string(schemaHash)),
            ]))),
            JSONMember("scopes", .array(scopes.map { scope in
                .object(JSONObject([
                    JSONMember("id", .string(scope.id)),
                    JSONMember("cardinality", PipelineJSON.integer(scope.cardinality)),
                    JSONMember("checksum", .string(scope.checksum)),
                ]))
            })),
            JSONMember("files", .array(files.map { file in
                .object(JSONObject([
                    JSONMember("name", .string(file.name)), JSONMember("bytes", PipelineJSON.integer(file.bytes)),
                    JSONMember("sha256", .string(file.sha256)),
                ]))
            })),
        ]))
    }
}
