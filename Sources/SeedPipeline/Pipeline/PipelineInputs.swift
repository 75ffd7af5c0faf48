import Foundation
import SeedArtifacts
import SynchroProtocol

/// The reuse rule (docs/pipelines.md, "Up to date"): a publication is reused when it was made by the same tool
/// version from the same definition and the same source content.
///
/// The inputs are the definition's effective values (steps, scopes, page limit, pack level, rehearsal identity,
/// the source's kind and — for the embedded source — the SHA-256 of the dataset files and the row count, or the
/// server URL), never a credential or a path. Their fingerprint is recorded in the evidence. A server's content
/// can change without the definition changing, so for a server source the rule also compares the
/// ``PipelineSourceState`` of a fresh export manifest with the one recorded in the evidence.
struct PipelineInputs {
    let json: JSONValue
    /// Lowercase hex SHA-256 of the canonical ``json``.
    let fingerprint: String

    /// `datasetFiles`: file name → SHA-256 of each file of the embedded source's dataset directory.
    init(definition: PipelineDefinition, datasetFiles: [String: String]) {
        let source: JSONValue
        switch definition.source {
        case .embedded(_, let rows):
            source = .object(JSONObject([
                JSONMember("kind", .string("embedded")),
                JSONMember("dataset_files", .object(JSONObject(datasetFiles.map { name, digest in
                    JSONMember(name, .string(digest))
                }))),
                JSONMember("rows", rows.map { PipelineJSON.integer($0) } ?? .null),
            ]))
        case .server(let server):
            source = .object(JSONObject([
                JSONMember("kind", .string("server")), JSONMember("url", .string(server.url)),
            ]))
        case .postgresql(let postgresql):
            // The file refuses a password in the connection string, so it may be recorded.
            source = .object(JSONObject([
                JSONMember("kind", .string("postgresql")), JSONMember("connection", .string(postgresql.connection)),
            ]))
        case .delta(let delta):
            // The definition's bytes (entities, columns, paging, base URL), never its path or a credential's value.
            source = .object(JSONObject([
                JSONMember("kind", .string("delta")), JSONMember("definition_sha256", .string(delta.definitionSHA256)),
                JSONMember("base_url", .string(delta.definition.baseURL)),
            ]))
        }
        json = .object(JSONObject([
            JSONMember("tool_version", .string(SeedArtifacts.toolVersion)),
            JSONMember("source", source),
            JSONMember("scopes", definition.scopes.map { .array($0.map(JSONValue.string)) } ?? .null),
            JSONMember("page_limit", PipelineJSON.integer(definition.pageLimit)),
            JSONMember("pack_level", PipelineJSON.integer(Int64(definition.packLevel))),
            JSONMember("rehearsal", .object(JSONObject([
                JSONMember("user", definition.rehearsal.user.map(JSONValue.string) ?? .null),
                JSONMember("rebuild_compare", .bool(definition.rehearsal.rebuildCompare)),
                JSONMember("app_version", .string(definition.rehearsal.appVersion)),
            ]))),
            JSONMember("steps", .array(definition.steps.map { .string($0.rawValue) })),
        ]))
        fingerprint = Hex.encode(SHA256.hash((try? CanonicalJSON.encode(json)) ?? []))
    }

    /// SHA-256 of the two files a dataset directory is made of (`manifest.json`, `dataset.json`), by name.
    static func datasetFiles(_ directory: String) -> [String: String] {
        var digests: [String: String] = [:]
        for name in ["manifest.json", "dataset.json"] {
            let path = URL(fileURLWithPath: directory).appendingPathComponent(name).path
            digests[name] = (try? FileDigest.sha256(path: path))?.hex ?? "missing"
        }
        return digests
    }
}

/// What a source's portable content is, from an export manifest: schema, stream generation and, per exported
/// scope, cardinality, checksum and generations. Two exports with the same state carry the same rows, and a seed
/// made from either continues on the same server.
struct PipelineSourceState: Equatable {
    let json: JSONValue

    init(export: SeedExportManifest, scopes: [String]?) {
        let selected = export.scopes.filter { scope in scopes?.contains { $0.exactlyEquals(scope.id) } ?? true }
        json = .object(JSONObject([
            JSONMember("schema", .object(JSONObject([
                JSONMember("version", PipelineJSON.integer(export.schemaVersion)),
                JSONMember("hash", .string(export.schemaHash)),
            ]))),
            JSONMember("stream_generation", export.streamGenerationJSON),
            JSONMember("scopes", .array(selected.map { scope in
                .object(JSONObject([
                    JSONMember("id", .string(scope.id)),
                    JSONMember("cardinality", PipelineJSON.integer(scope.cardinality)),
                    JSONMember("checksum", .string(scope.checksum.hex)),
                    JSONMember("registry_generation", PipelineJSON.integer(scope.registryGeneration)),
                    JSONMember("membership_generation", PipelineJSON.integer(scope.membershipGeneration)),
                    JSONMember("retention_generation", PipelineJSON.integer(scope.retentionGeneration)),
                ]))
            })),
        ]))
    }

    init(json: JSONValue) {
        self.json = json
    }

    static func == (lhs: PipelineSourceState, rhs: PipelineSourceState) -> Bool {
        (try? CanonicalJSON.encode(lhs.json)) == (try? CanonicalJSON.encode(rhs.json))
    }
}
