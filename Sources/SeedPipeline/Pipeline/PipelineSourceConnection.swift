import Foundation
import SeedArtifacts
import SeedSources
import SynchroServer

/// The source while the steps run: where to export from and whom the rehearsal syncs as. For the embedded source
/// it owns the reference server, which ``stop()`` shuts down.
final class PipelineSourceConnection: Sendable {
    let exportSource: RecordingExportSource
    let rehearsalServer: String
    /// The rehearsal user's credential; nil when a server source has none (the pipeline does not rehearse).
    let rehearsalCredential: String?
    private let embedded: EmbeddedReferenceServer?

    /// Starts the embedded server (its database in `scratch`) or connects to the server source.
    init(
        _ definition: PipelineDefinition, probe: PipelineSourceProbe, scratch: String,
        wrap: (@Sendable (any SeedExportSource) -> any SeedExportSource)?, network: NetworkSettings
    ) throws(PipelineError) {
        switch definition.source {
        case .embedded(_, let rows):
            let server = try EmbeddedReferenceServer(
                dataset: probe.dataset!, rows: rows,
                databasePath: URL(fileURLWithPath: scratch).appendingPathComponent("server.db").path,
                user: definition.rehearsal.user ?? "pipeline")
            embedded = server
            rehearsalServer = server.baseURL
            rehearsalCredential = server.userToken
            do throws(PipelineError) {
                exportSource = RecordingExportSource(
                    try PipelineSourceProbe.exportSource(
                        url: server.baseURL, operatorToken: server.operatorToken, wrap: wrap, network: network))
            } catch {
                server.stop()
                throw error
            }
        case .server(let server):
            embedded = nil
            rehearsalServer = server.url
            rehearsalCredential = server.userToken?.value
            exportSource = RecordingExportSource(
                try PipelineSourceProbe.exportSource(definition.source, wrap: wrap, network: network))
        case .delta:
            preconditionFailure("a delta source runs through PipelineDeltaRun")
        case .postgresql(let postgresql):
            embedded = nil
            rehearsalServer = postgresql.serverURL ?? ""
            rehearsalCredential = postgresql.userToken?.value
            exportSource = RecordingExportSource(
                try PipelineSourceProbe.exportSource(definition.source, wrap: wrap, network: network))
        }
    }

    /// Runs one export; from PostgreSQL, the whole transaction again after a serialization failure.
    func exporting<Value>(_ body: () throws(SeedExportError) -> Value) throws(SeedExportError) -> Value {
        guard let postgresql = exportSource.base as? PostgresExportSource else { return try body() }
        return try postgresql.withRetries { (_) throws(SeedExportError) in try body() }
    }

    func stop() {
        embedded?.stop()
    }
}
