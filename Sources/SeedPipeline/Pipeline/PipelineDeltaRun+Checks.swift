import Foundation
import SeedArtifacts
import SeedSources
import SQLiteKit
import SynchroHTTP
import SynchroProtocol
import SystemKit

extension PipelineDeltaRun {
    /// The reuse rule for a delta source (docs/pipelines.md, "Up to date"; docs/decisions.md): the publication in
    /// place is complete and intact, its `pipeline.fingerprint` matches the inputs — which cover the definition
    /// file's bytes, so any change to entities, columns, paging or base URL counts — and the API has nothing new:
    /// a copy of the published `seed.db`, warmed from its checkpoints exactly as an app would, keeps every
    /// entity type's cursor and needs no reset. A delta API has no manifest to compare, so "unchanged" is asked of
    /// the API itself, one page per entity type. Any failure of that check (the API unreachable, a refused token)
    /// means "not known to be current": the run goes on and its export reports the real error.
    static func upToDate(
        _ definition: PipelineDefinition, source: PipelineDeltaSource, publication: PipelinePublication,
        options: PipelineRunOptions
    ) -> PublishedSeed? {
        guard definition.runs(.publish) else { return nil }
        var expected = [PipelinePublication.seedName, PipelinePublication.evidenceName]
        if definition.runs(.pack) { expected.append(PipelinePublication.packedName) }
        let inputs = PipelineInputs(definition: definition, datasetFiles: [:])
        guard let current = publication.current(expected: expected),
              current.evidence.objectValue?["format"]?.stringValue == PublishedSeed.deltaEvidenceFormat,
              current.evidence.objectValue?["pipeline"]?.objectValue?["fingerprint"]?.stringValue == inputs.fingerprint
        else { return nil }
        if source.definition.bearerEnvironmentVariable != nil, source.bearer == nil { return nil }
        let copy = URL(fileURLWithPath: publication.parent)
            .appendingPathComponent(publication.scratchPrefix + UUID().uuidString.lowercased() + ".db").path
        defer {
            for suffix in ["", "-journal", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: copy + suffix) }
        }
        do {
            try FileManager.default.copyItem(atPath: publication.path(PipelinePublication.seedName), toPath: copy)
        } catch {
            return nil
        }
        guard let before = cursors(copy) else { return nil }
        do {
            let report = try DeltaWarm.warm(
                definition: source.definition, bearerToken: source.bearer?.value, database: copy,
                options: DeltaExportOptions(
                    maximumRetries: options.network.retries, sleep: options.network.sleep,
                    isInterrupted: options.isInterrupted))
            guard report.entities.allSatisfy({ $0.resets == 0 }), cursors(copy) == before else { return nil }
        } catch {
            return nil
        }
        return current.seed
    }

    /// Each entity type's checkpoint cursor in the delta seed at `path`, by entity.
    private static func cursors(_ path: String) -> [String: String]? {
        guard let connection = try? Connection(path: path, mode: .readOnly) else { return nil }
        defer { connection.close() }
        guard let rows = try? connection.rows("SELECT entity, cursor FROM _delta_checkpoints") else { return nil }
        var cursors: [String: String] = [:]
        for row in rows {
            guard let entity = row[0].textValue, let cursor = row[1].textValue else { return nil }
            cursors[entity] = cursor
        }
        return cursors
    }

    /// The dry run of a delta source (docs/pipelines.md, "Dry run"): `definition` (loaded and valid — a broken one
    /// already failed the load), `bearer` (the variable `auth.bearer_env` names is set), `source` (the base URL
    /// answers over HTTP; any status counts, since the base URL itself need not be a route), `publish_parent`.
    /// Nothing durable is written; the reuse check warms a copy beside the publish directory and removes it.
    static func dryRun(
        _ definition: PipelineDefinition, source: PipelineDeltaSource, publication: PipelinePublication,
        options: PipelineRunOptions, started: ContinuousClock.Instant
    ) -> PipelineReport {
        let delta = source.definition
        var checks = [PipelineCheck(
            name: "definition", rule: nil,
            message: "\(URL(fileURLWithPath: source.definitionPath).lastPathComponent) is a valid delta source "
                + "definition: \(delta.entities.count) entity type(s) at \(NetworkFailure.displayURL(delta.baseURL))")]
        if let variable = delta.bearerEnvironmentVariable {
            checks.append(source.bearer == nil
                ? PipelineCheck(
                    name: "bearer", rule: "missing_credential",
                    message: "the bearer variable $\(variable) (auth.bearer_env) is not set")
                : PipelineCheck(name: "bearer", rule: nil, message: "the bearer token from $\(variable) is set"))
        } else {
            checks.append(PipelineCheck(name: "bearer", rule: nil, message: "the definition names no bearer variable"))
        }
        checks.append(reachability(delta.baseURL, network: options.network))
        checks.append(PipelineDryRun.publishParentCheck(
            definition, probe: nil, publication: publication, freeSpace: options.freeSpace))
        let current = options.force || !checks.allSatisfy(\.passed)
            ? nil : upToDate(definition, source: source, publication: publication, options: options)
        return PipelineDryRun.report(definition, checks: checks, upToDate: current, started: started)
    }

    /// `GET` of the base URL: reachable when any HTTP answer comes back.
    private static func reachability(_ baseURL: String, network: NetworkSettings) -> PipelineCheck {
        var request = TransportRequest(method: .get, path: "/")
        request.maximumResponseBytes = 64 << 10
        do {
            let transport = try CurlTransport(
                configuration: NetworkTimeouts.configuration(baseURL: baseURL, timeout: network.timeout))
            let response = try network.retryPolicy.send(request, via: transport, baseURL: transport.baseURL)
            return PipelineCheck(
                name: "source", rule: nil,
                message: "\(NetworkFailure.displayURL(baseURL)) is reachable (HTTP \(response.status))")
        } catch let failure as NetworkFailure {
            return PipelineCheck(name: "source", rule: failure.rule, message: failure.description)
        } catch {
            return PipelineCheck(
                name: "source", rule: "invalid_source", message: "\(NetworkFailure.displayURL(baseURL)): not usable")
        }
    }
}
