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

    /// Reads the members of `evidence` that ``SeedEvidence`` writes; nil when one is missing or mistyped.
    init?(evidence: JSONValue, directory: String) {
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
        var files: [File] = []
        for artifact in artifacts {
            guard let artifact = artifact.objectValue, let name = artifact["name"]?.stringValue,
                  let bytes = artifact["bytes"]?.numberValue?.exactInt64, let sha256 = artifact["sha256"]?.stringValue
            else { return nil }
            files.append(File(name: name, bytes: bytes, sha256: sha256))
        }
        self.directory = directory
        self.schemaVersion = version
        self.schemaHash = hash
        self.rows = rows
        self.scopes = parsedScopes
        self.files = files
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
