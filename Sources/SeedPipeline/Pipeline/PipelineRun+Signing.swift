import Foundation
import SeedArtifacts
import SynchroProtocol

extension PipelineRun {
    /// Reads and checks the signing key (``PipelineSigningKey/read(_:)``); the publish step signs with it.
    mutating func runSign() -> StepOutcome {
        let (key, outcome) = PipelineSigningKey.read(definition.signingKey)
        signingKey = key
        return outcome
    }

    /// The provenance of this run's publication over `subjects`: an in-toto statement with SLSA v1 provenance whose
    /// build definition names the pipeline file and its resolved inputs (`externalParameters`), and the pipeline
    /// and dataset files by digest (`resolvedDependencies`).
    func provenance(_ subjects: [ProvenanceStatement.Subject], source: RecordingExportSource) -> ProvenanceStatement {
        var dependencies: [ProvenanceStatement.Subject] = []
        if let file = definition.file {
            dependencies.append(ProvenanceStatement.Subject(name: file.name, sha256: file.sha256))
        }
        if let files = probe.inputs.json.objectValue?["source"]?.objectValue?["dataset_files"]?.objectValue {
            for member in files.members {
                guard let digest = member.value.stringValue, digest.utf8.count == 64 else { continue }
                dependencies.append(ProvenanceStatement.Subject(name: "dataset/\(member.key)", sha256: digest))
            }
        }
        let exportIdentity: JSONValue = export.map { report in
            .object(JSONObject([
                JSONMember("export_id", .string(report.exportID)),
                JSONMember("export_manifest_hash", .string(report.exportManifestHash)),
                JSONMember("schema", .object(JSONObject([
                    JSONMember("version", .number(JSONNumber(report.schema.version))),
                    JSONMember("hash", .string(report.schema.hash)),
                ]))),
                JSONMember("scopes", .array(report.scopes.map { .string($0.id) })),
            ]))
        } ?? .null
        let state = source.exportManifest.map { PipelineSourceState(export: $0, scopes: definition.scopes).json }
        return ProvenanceStatement.pipeline(
            definition, inputs: probe.inputs, sourceState: state ?? .null, export: exportIdentity,
            dependencies: dependencies, subjects: subjects, started: startedAt)
    }
}

extension ProvenanceStatement {
    /// The statement of a pipeline publication, either run path: `externalParameters` names the pipeline (name,
    /// file, input fingerprint), its resolved inputs, the source kind and `sourceState`, the `export` identity and
    /// the pack level; `dependencies` are the input files read by digest.
    static func pipeline(
        _ definition: PipelineDefinition, inputs: PipelineInputs, sourceState: JSONValue, export: JSONValue,
        dependencies: [Subject], subjects: [Subject], started: Date
    ) -> ProvenanceStatement {
        let parameters = JSONValue.object(JSONObject([
            JSONMember("pipeline", .object(JSONObject([
                JSONMember("name", .string(definition.name)),
                JSONMember("file", definition.file.map { .string($0.name) } ?? .null),
                JSONMember("fingerprint", .string(inputs.fingerprint)),
            ]))),
            JSONMember("inputs", inputs.json),
            JSONMember("source", .object(JSONObject([
                JSONMember("kind", .string(definition.source.kind)), JSONMember("state", sourceState),
            ]))),
            JSONMember("export", export),
            JSONMember("levels", .object(JSONObject([
                JSONMember("pack", definition.runs(.pack) ? PipelineJSON.integer(Int64(definition.packLevel)) : .null),
            ]))),
        ]))
        return ProvenanceStatement(
            subjects: subjects, buildType: pipelineBuildType, externalParameters: parameters,
            dependencies: dependencies, started: started, finished: Date())
    }
}

extension PipelineSigningKey {
    /// The `sign` step of both run paths: reads and checks the key, so a missing, unreadable, too-open or wrong key
    /// fails the run before the publish step; the key stays in memory only.
    static func read(_ source: PipelineSigningKey?) -> (key: Ed25519PrivateKey?, outcome: StepOutcome) {
        guard let source else {
            return (nil, .failed(rule: "missing_signing_key", message: "the pipeline has no sign member"))
        }
        do throws(SigningError) {
            let key = switch source {
            case .file(let path): try SigningKeyFile.privateKey(path: path)
            case .environment(let credential):
                try Ed25519PrivateKey(pem: Array(credential.value.utf8), source: credential.description)
            }
            return (key, .passed(rows: nil, bytes: nil))
        } catch {
            return (nil, .failed(rule: error.rule, message: error.description))
        }
    }
}
