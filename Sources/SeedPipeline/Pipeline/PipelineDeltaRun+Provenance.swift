import Foundation
import SeedArtifacts
import SeedSources
import SynchroProtocol

extension PipelineDeltaRun {
    /// The provenance of this run's publication over `subjects`, in the same statement as a Synchro run's
    /// (``PipelineRun/provenance(_:source:)``): the build definition names the pipeline file and its resolved
    /// inputs; the source is the delta definition (its file's digest, base URL and entity types) and the export
    /// identity is each entity type's rows and digest, a delta API having no export manifest. The pipeline file
    /// and the definition file are the resolved dependencies. No cursor, credential or header value.
    func provenance(_ subjects: [ProvenanceStatement.Subject]) -> ProvenanceStatement {
        var dependencies: [ProvenanceStatement.Subject] = []
        if let file = definition.file {
            dependencies.append(ProvenanceStatement.Subject(name: file.name, sha256: file.sha256))
        }
        let definitionName = URL(fileURLWithPath: source.definitionPath).lastPathComponent
        dependencies.append(ProvenanceStatement.Subject(
            name: "delta/\(definitionName)", sha256: source.definitionSHA256))
        let state = JSONValue.object(JSONObject([
            JSONMember("definition", .string(definitionName)),
            JSONMember("definition_sha256", .string(source.definitionSHA256)),
            JSONMember("base_url", .string(source.definition.baseURL)),
            JSONMember("entities", .array(source.definition.entities.map { .string($0.name) })),
        ]))
        let exportIdentity: JSONValue = export.map { report in
            .object(JSONObject([
                JSONMember("rows", PipelineJSON.integer(report.totalRows)),
                JSONMember("entities", .array(report.entities.map { entity in
                    .object(JSONObject([
                        JSONMember("entity", .string(entity.name)), JSONMember("rows", PipelineJSON.integer(entity.rows)),
                        JSONMember("digest", .string(entity.digest)),
                    ]))
                })),
            ]))
        } ?? .null
        return ProvenanceStatement.pipeline(
            definition, inputs: inputs, sourceState: state, export: exportIdentity, dependencies: dependencies,
            subjects: subjects, started: startedAt)
    }
}
