import Foundation
import SeedArtifacts
import SeedSources
import SynchroClient
import SynchroProtocol
import SynchroServer

/// What the runner learns about a source before any step: it is usable, the scopes the definition names are
/// portable there, and what the reuse rule compares.
struct PipelineSourceProbe {
    let inputs: PipelineInputs
    /// The server source's current state (from a fresh export manifest); nil for the embedded source, whose
    /// content is fixed by its dataset files.
    let state: PipelineSourceState?
    /// The embedded source's dataset.
    let dataset: Dataset?

    /// Loads the embedded dataset, or asks the server for its schema and a fresh export manifest (which the
    /// reference server records as an export; upstream's manifest function is read-only). Nothing local is written.
    static func probe(
        _ definition: PipelineDefinition, wrap: (@Sendable (any SeedExportSource) -> any SeedExportSource)?,
        network: NetworkSettings = NetworkSettings()
    ) throws(PipelineError) -> PipelineSourceProbe {
        switch definition.source {
        case .embedded(let path, _):
            let dataset: Dataset
            do {
                dataset = try Dataset(directory: URL(fileURLWithPath: path))
            } catch {
                throw .invalidDataset(path: path, error)
            }
            let portable = dataset.portableScopes
            for scope in definition.scopes ?? [] where !portable.contains(where: { $0.exactlyEquals(scope) }) {
                throw .scopeNotPortable(scope)
            }
            return PipelineSourceProbe(
                inputs: PipelineInputs(definition: definition, datasetFiles: PipelineInputs.datasetFiles(path)),
                state: nil, dataset: dataset)
        case .delta:
            preconditionFailure("a delta source runs through PipelineDeltaRun")
        case .server, .postgresql:
            let source = try exportSource(definition.source, wrap: wrap, network: network)
            let export: SeedExportManifest
            do {
                export = try currentExport(source, pageLimit: definition.pageLimit)
                try source.finish()
            } catch {
                throw .source(error)
            }
            for scope in definition.scopes ?? [] where export.scope(scope) == nil {
                throw .scopeNotPortable(scope)
            }
            return PipelineSourceProbe(
                inputs: PipelineInputs(definition: definition, datasetFiles: [:]),
                state: PipelineSourceState(export: export, scopes: definition.scopes), dataset: nil)
        }
    }

    /// The server's schema manifest (checked to be valid) and a fresh export manifest.
    private static func currentExport(
        _ source: any SeedExportSource, pageLimit: Int64
    ) throws(SeedExportError) -> SeedExportManifest {
        try SeedExporter.currentManifests(from: source, pageLimit: pageLimit).export
    }

    /// The export source of a server or PostgreSQL source (the embedded source's server is started first).
    static func exportSource(
        _ source: PipelineSource, wrap: (@Sendable (any SeedExportSource) -> any SeedExportSource)?,
        network: NetworkSettings
    ) throws(PipelineError) -> any SeedExportSource {
        switch source {
        case .embedded: preconditionFailure("the embedded source has no export source before its server starts")
        case .delta: preconditionFailure("a delta source runs through PipelineDeltaRun")
        case .server(let server):
            return try exportSource(
                url: server.url, operatorToken: server.operatorToken.value, wrap: wrap, network: network)
        case .postgresql(let postgresql):
            let source: PostgresExportSource
            do {
                source = try PostgresExportSource(connectionString: postgresql.connection)
            } catch {
                throw .source(error)
            }
            return wrap?(source) ?? source
        }
    }

    static func exportSource(
        url: String, operatorToken: String, wrap: (@Sendable (any SeedExportSource) -> any SeedExportSource)?,
        network: NetworkSettings
    ) throws(PipelineError) -> any SeedExportSource {
        let source: HTTPExportSource
        do {
            source = try HTTPExportSource(
                baseURL: url, operatorToken: operatorToken, timeout: network.timeout, retry: network.retryPolicy)
        } catch {
            throw .source(error)
        }
        return wrap?(source) ?? source
    }
}
