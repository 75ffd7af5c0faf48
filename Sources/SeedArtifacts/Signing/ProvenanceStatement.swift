import Foundation
import SynchroProtocol

/// An in-toto Statement v1 whose predicate is SLSA Provenance v1: which files were published (subjects, by name
/// and SHA-256) and how they were built (the pipeline file, its resolved inputs, the builder and the times).
/// It is the payload of the publication's ``DSSEEnvelope``, encoded with the canonical JSON encoder.
public struct ProvenanceStatement: Sendable {
    public static let statementType = "https://in-toto.io/Statement/v1"
    public static let predicateType = "https://slsa.dev/provenance/v1"
    /// The build type of a pipeline run and of `seedkit sign` (seedkit has no web home; a URN names them).
    public static let pipelineBuildType = "urn:seedkit:build-type:pipeline:v1"
    public static let signBuildType = "urn:seedkit:build-type:sign:v1"
    /// The builder: seedkit itself, with its version in `builder.version`.
    public static let builderID = "urn:seedkit:builder:seedkit"

    /// One published file.
    public struct Subject: Sendable, Equatable {
        public let name: String
        /// Lowercase hex SHA-256.
        public let sha256: String

        public init(name: String, sha256: String) {
            self.name = name
            self.sha256 = sha256
        }
    }

    public let subjects: [Subject]
    public let buildType: String
    /// `buildDefinition.externalParameters`: what the caller chose (the pipeline file and its inputs).
    public let externalParameters: JSONValue
    /// `buildDefinition.resolvedDependencies`: `{name, digest:{sha256}}` of each input file read.
    public let dependencies: [Subject]
    public let started: Date
    public let finished: Date

    public init(
        subjects: [Subject], buildType: String, externalParameters: JSONValue, dependencies: [Subject] = [],
        started: Date, finished: Date
    ) {
        self.subjects = subjects
        self.buildType = buildType
        self.externalParameters = externalParameters
        self.dependencies = dependencies
        self.started = started
        self.finished = finished
    }

    public var json: JSONValue {
        .object(JSONObject([
            JSONMember("_type", .string(Self.statementType)),
            JSONMember("subject", .array(subjects.map(Self.descriptor))),
            JSONMember("predicateType", .string(Self.predicateType)),
            JSONMember("predicate", .object(JSONObject([
                JSONMember("buildDefinition", .object(JSONObject([
                    JSONMember("buildType", .string(buildType)),
                    JSONMember("externalParameters", externalParameters),
                    JSONMember("resolvedDependencies", .array(dependencies.map(Self.descriptor))),
                ]))),
                JSONMember("runDetails", .object(JSONObject([
                    JSONMember("builder", .object(JSONObject([
                        JSONMember("id", .string(Self.builderID)),
                        JSONMember("version", .object(JSONObject([
                            JSONMember("seedkit", .string(SeedArtifacts.toolVersion)),
                        ]))),
                    ]))),
                    JSONMember("metadata", .object(JSONObject([
                        JSONMember("startedOn", .string(Self.timestamp(started))),
                        JSONMember("finishedOn", .string(Self.timestamp(finished))),
                    ]))),
                ]))),
            ]))),
        ]))
    }

    /// The payload bytes: canonical JSON (RFC 8785).
    public func encoded() throws -> [UInt8] {
        try CanonicalJSON.encode(json)
    }

    /// The subjects of a statement payload; nil when it is not an in-toto v1 statement with SLSA v1 provenance
    /// and `{name, digest:{sha256}}` subjects.
    public static func subjects(ofPayload payload: [UInt8]) -> [Subject]? {
        guard let json = try? StrictJSONParser(limits: JSONLimits(maxBytes: 16 << 20, maxDepth: 64)).parse(payload),
              let object = json.objectValue, object["_type"]?.stringValue == statementType,
              object["predicateType"]?.stringValue == predicateType, object["predicate"]?.objectValue != nil,
              let list = object["subject"]?.arrayValue, !list.isEmpty
        else { return nil }
        var subjects: [Subject] = []
        for entry in list {
            guard let entry = entry.objectValue, let name = entry["name"]?.stringValue,
                  let digest = entry["digest"]?.objectValue?["sha256"]?.stringValue,
                  digest.utf8.count == 64, digest.allSatisfy({ $0.isHexDigit && !$0.isUppercase }),
                  !subjects.contains(where: { $0.name == name })
            else { return nil }
            subjects.append(Subject(name: name, sha256: digest))
        }
        return subjects
    }

    private static func descriptor(_ subject: Subject) -> JSONValue {
        .object(JSONObject([
            JSONMember("name", .string(subject.name)),
            JSONMember("digest", .object(JSONObject([JSONMember("sha256", .string(subject.sha256))]))),
        ]))
    }

    /// RFC 3339 UTC with whole seconds, as SLSA's timestamps are written.
    static func timestamp(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: date)
    }
}
