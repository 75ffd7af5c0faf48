import Foundation
import Glibc
import SeedArtifacts
import SynchroHTTP
import SynchroProtocol
import SystemKit

/// One thing `pipeline run --dry-run` checked (docs/pipelines.md, "Dry run"): `source` (reachable, its manifests
/// valid), `operator_credential` (an operator call accepted), `rehearsal_credential` (a connect accepted),
/// `publish_parent` (writable, with room for the run). A failed check carries the rule it broke.
public struct PipelineCheck: Sendable, Equatable {
    public let name: String
    /// Nil when the check passed, else the rule it broke (`rehearsal_credential_refused`, `connection_refused`, …).
    public let rule: String?
    /// What was checked and found, without a credential's value.
    public let message: String

    public var passed: Bool { rule == nil }

    public init(name: String, rule: String?, message: String) {
        self.name = name
        self.rule = rule
        self.message = message
    }

    var json: JSONValue {
        .object(JSONObject([
            JSONMember("check", .string(name)), JSONMember("passed", .bool(passed)),
            JSONMember("rule", rule.map(JSONValue.string) ?? .null), JSONMember("message", .string(message)),
        ]))
    }
}

/// The checks of a dry run beyond the definition itself: everything a real run needs from outside, tried without
/// writing anything durable, so a wrong token or an unusable publish directory fails the dry run instead of the
/// real run after its export.
enum PipelineDryRun {
    /// The report of a dry run of either source kind: every step the definition runs is planned, or reused when
    /// the publication is already `upToDate`; the outcome is `validated` only when every check passed.
    static func report(
        _ definition: PipelineDefinition, checks: [PipelineCheck], upToDate current: PublishedSeed?,
        started: ContinuousClock.Instant
    ) -> PipelineReport {
        let steps = PipelineStep.allCases.map { step in
            PipelineStepResult(
                step: step, outcome: !definition.runs(step) ? .skipped : current != nil ? .reused : .planned)
        }
        var report = PipelineReport(
            name: definition.name, outcome: checks.allSatisfy(\.passed) ? .validated : .failed,
            upToDate: current != nil, steps: steps, publishDirectory: definition.publishDirectory, seed: current,
            export: nil, verification: nil, pack: nil, rehearsal: nil,
            seconds: PipelineRunner.seconds(since: started))
        report.checks = checks
        return report
    }

    /// The bytes a run needs beside the publish directory when nothing better is known: the seed, its packed frame,
    /// the installed copy and the rehearsal store.
    static let minimumEstimate: Int64 = 16 << 20
    /// A generous size of one exported row in `seed.db` with its receipts and indexes.
    static let bytesPerRow: Int64 = 1_024

    /// The source check from the probe's outcome: a refused operator credential is its own check.
    static func sourceChecks(
        _ definition: PipelineDefinition, probe: Result<PipelineSourceProbe, PipelineError>
    ) -> [PipelineCheck] {
        let where_: String = switch definition.source {
        case .embedded(let dataset, _): "the embedded reference server's dataset \(dataset)"
        case .server(let server): NetworkFailure.displayURL(server.url)
        case .postgresql: "PostgreSQL (libpq)"
        case .delta(let delta): NetworkFailure.displayURL(delta.definition.baseURL)
        }
        switch probe {
        case .success(let probe):
            var checks = [PipelineCheck(
                name: "source", rule: nil,
                message: "\(where_) is reachable; \(scopeCount(probe)) portable scope(s) to export")]
            if case .server(let server) = definition.source {
                checks.append(PipelineCheck(
                    name: "operator_credential", rule: nil,
                    message: "the operator token from $\(server.operatorToken.variable) was accepted"))
            }
            return checks
        case .failure(.source(.refused(let route, let status, _))) where status == 401 || status == 403:
            let variable = if case .server(let server) = definition.source { "$\(server.operatorToken.variable)" }
                else { "the operator credential" }
            return [
                PipelineCheck(name: "source", rule: nil, message: "\(where_) is reachable"),
                PipelineCheck(
                    name: "operator_credential", rule: "operator_credential_refused",
                    message: "\(route): the server refused the operator token from \(variable) (HTTP \(status)); "
                        + "fix it there"),
            ]
        case .failure(let error):
            return [PipelineCheck(name: "source", rule: error.rule, message: error.description)]
        }
    }

    /// The rehearsal credential: a connect with an empty body. The server authenticates before it reads the body
    /// (wire-protocol §8.4), so 401 or 403 means the credential and any other answer means it was accepted; the
    /// empty body registers nothing.
    static func rehearsalCheck(_ definition: PipelineDefinition, network: NetworkSettings) -> PipelineCheck? {
        guard definition.runs(.rehearse) else { return nil }
        let server: String
        let credential: PipelineCredential
        switch definition.source {
        case .embedded, .delta: return nil
        case .server(let source):
            guard let token = source.userToken else { return nil }
            (server, credential) = (source.url, token)
        case .postgresql(let source):
            guard let url = source.serverURL, let token = source.userToken else { return nil }
            (server, credential) = (url, token)
        }
        let request = TransportRequest.protocolPost(
            path: "/sync/connect", body: Array("{}".utf8), credential: credential.value,
            appVersion: definition.rehearsal.appVersion)
        do {
            let transport = try CurlTransport(
                configuration: NetworkTimeouts.configuration(baseURL: server, timeout: network.timeout))
            let response = try network.retryPolicy.send(request, via: transport, baseURL: transport.baseURL)
            guard response.status != 401 && response.status != 403 else {
                return PipelineCheck(
                    name: "rehearsal_credential", rule: "rehearsal_credential_refused",
                    message: "\(NetworkFailure.displayURL(server))/sync/connect refused the rehearsal user's token "
                        + "from $\(credential.variable) (HTTP \(response.status)); fix it there")
            }
            return PipelineCheck(
                name: "rehearsal_credential", rule: nil,
                message: "the rehearsal user's token from $\(credential.variable) was accepted")
        } catch let failure as NetworkFailure {
            return PipelineCheck(name: "rehearsal_credential", rule: failure.rule, message: failure.description)
        } catch {
            return PipelineCheck(
                name: "rehearsal_credential", rule: "invalid_source", message: "\(server): not a usable URL")
        }
    }

    /// The publish directory's parent: the nearest existing ancestor is a directory this process can create a file
    /// in (the file is removed at once), with at least the estimated bytes free (`freeSpace`, statvfs by default).
    static func publishParentCheck(
        _ definition: PipelineDefinition, probe: PipelineSourceProbe?, publication: PipelinePublication,
        freeSpace: @Sendable (String) -> Int64?
    ) -> PipelineCheck {
        let parent = publication.parent
        var existing = parent
        while !FileSystem.exists(existing), existing != "/" {
            existing = URL(fileURLWithPath: existing).deletingLastPathComponent().path
        }
        guard FileSystem.isDirectory(existing) else {
            return PipelineCheck(
                name: "publish_parent", rule: "publish_parent_unusable",
                message: "cannot create \(parent): \(existing) is not a directory")
        }
        let probePath = URL(fileURLWithPath: existing)
            .appendingPathComponent(".seedkit-dry-run-\(UUID().uuidString.lowercased())").path
        let descriptor = open(probePath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            let error = SystemError(operation: "create a file in", path: existing, code: errno)
            return PipelineCheck(
                name: "publish_parent", rule: "publish_parent_not_writable", message: error.description)
        }
        close(descriptor)
        unlink(probePath)
        let needed = estimatedBytes(definition, probe: probe, publication: publication)
        if let free = freeSpace(existing), free < needed {
            return PipelineCheck(
                name: "publish_parent", rule: "publish_parent_no_space",
                message: "\(existing) has \(free) bytes free; the run needs about \(needed) (estimated)")
        }
        return PipelineCheck(
            name: "publish_parent", rule: nil,
            message: "\(existing) is writable with room for about \(needed) bytes (estimated)")
    }

    /// Free bytes for an unprivileged writer of the file system holding `path`, or nil when statvfs fails.
    @Sendable static func statvfsFreeSpace(_ path: String) -> Int64? {
        var stats = statvfs()
        guard statvfs(path, &stats) == 0 else { return nil }
        let (bytes, overflow) = Int64(stats.f_bavail).multipliedReportingOverflow(by: Int64(stats.f_frsize))
        return overflow ? Int64.max : bytes
    }

    /// What a run writes beside the publish directory: four times the seed (seed, frame, installed copy, rehearsal
    /// store), the seed sized from the source's row count or the previous publication, at least 16 MiB.
    static func estimatedBytes(
        _ definition: PipelineDefinition, probe: PipelineSourceProbe?, publication: PipelinePublication
    ) -> Int64 {
        var seed = rows(definition, probe: probe) * bytesPerRow
        seed = max(seed, FileSystem.size(of: publication.directory + "/" + PipelinePublication.seedName))
        return max(minimumEstimate, seed * 4)
    }

    private static func rows(_ definition: PipelineDefinition, probe: PipelineSourceProbe?) -> Int64 {
        if case .embedded(_, let rows?) = definition.source { return Int64(rows) }
        let scopes = probe?.state?.json.objectValue?["scopes"]?.arrayValue ?? []
        return scopes.reduce(0) { total, scope in
            total + (scope.objectValue?["cardinality"]?.numberValue?.exactInt64 ?? 0)
        }
    }

    private static func scopeCount(_ probe: PipelineSourceProbe) -> Int {
        probe.state?.json.objectValue?["scopes"]?.arrayValue?.count ?? probe.dataset?.portableScopes.count ?? 0
    }
}
