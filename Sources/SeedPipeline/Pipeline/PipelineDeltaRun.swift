import Foundation
import SeedArtifacts
import SeedSources
import SynchroProtocol
import SystemKit

/// One run of a pipeline whose source is a delta-sync API (docs/pipelines.md, "Delta source"): the same steps,
/// scratch directory, publication, evidence and reuse rule as ``PipelineRun``, with the delta forms of each step —
/// ``DeltaExporter``, the delta layout checks, ``DeltaSeedInstaller`` and ``DeltaRehearsal`` (warm from the seed's
/// checkpoints vs a full pull). A separate type because ``PipelineRun`` is built on a Synchro export source, its
/// manifests and the protocol rehearsal, none of which a delta API has. `sign` and the patch against the previous
/// publication work as for a Synchro seed (``PipelineSigningKey/read(_:)``, ``PipelinePatch``); the provenance
/// names the delta definition instead of an export manifest (``provenance(_:)``).
struct PipelineDeltaRun {
    let definition: PipelineDefinition
    let source: PipelineDeltaSource
    let inputs: PipelineInputs
    let publication: PipelinePublication
    let options: PipelineRunOptions
    let events: @Sendable (PipelineEvent) -> Void
    let scratch: String

    var results: [PipelineStepResult] = []
    var export: DeltaExportReport?
    var rehearsal: DeltaRehearsalReport?
    /// What the verify step found (`check` or `check:entity`); nil until it ran.
    var verificationFailures: [String]?
    /// The patch against the publication in place, when there is one.
    var patch: PipelinePatch?
    var published: PublishedSeed?
    /// The key the `sign` step read; the publish step signs with it.
    var signingKey: Ed25519PrivateKey?
    /// When the run started, for the provenance's `startedOn`.
    let startedAt = Date()

    init(
        definition: PipelineDefinition, source: PipelineDeltaSource, publication: PipelinePublication,
        options: PipelineRunOptions, events: @escaping @Sendable (PipelineEvent) -> Void
    ) {
        self.definition = definition
        self.source = source
        self.inputs = PipelineInputs(definition: definition, datasetFiles: [:])
        self.publication = publication
        self.options = options
        self.events = events
        scratch = URL(fileURLWithPath: publication.parent)
            .appendingPathComponent(publication.scratchPrefix + UUID().uuidString.lowercased()).path
    }

    func path(_ name: String) -> String { URL(fileURLWithPath: scratch).appendingPathComponent(name).path }
    private var seedPath: String { path(PipelinePublication.seedName) }
    private var packedPath: String { path(PipelinePublication.packedName) }
    private var patchPath: String { path(PipelinePublication.patchName) }
    /// The file a device receives: the packed frame when the pipeline packs, else the seed itself.
    private var shippedPath: String { definition.runs(.pack) ? packedPath : seedPath }

    /// The request budget and interruption check of every delta request of the run.
    private var deltaOptions: DeltaExportOptions {
        DeltaExportOptions(
            maximumRetries: options.network.retries, sleep: options.network.sleep,
            isInterrupted: options.isInterrupted)
    }

    /// Runs every listed step until one fails, and reports (as ``PipelineRun/execute(started:)``).
    mutating func execute(started: ContinuousClock.Instant) throws(PipelineError) -> PipelineReport {
        try PipelineError.io { () throws(SystemError) in
            try FileSystem.makeDirectory(publication.parent, intermediate: true)
            try FileSystem.makeDirectory(scratch)
        }
        defer { FileSystem.removeTree(scratch) }
        events(.sourceReady(kind: definition.source.kind, seconds: 0))
        results = PipelineStepLoop.run(definition, options: options, events: events) { step, soFar in
            results = soFar
            return perform(step)
        }
        let outcome = PipelineStepLoop.outcome(of: results, definition)
        let failed = outcome == .failed || outcome == .interrupted
        var report = PipelineReport(
            name: definition.name,
            outcome: outcome, upToDate: false, steps: results, publishDirectory: definition.publishDirectory,
            seed: failed ? nil : published, export: nil, verification: nil, pack: nil, rehearsal: nil,
            seconds: PipelineRunner.seconds(since: started))
        report.delta = PipelineReport.DeltaDetails(
            export: export?.json ?? .null, verification: verificationJSON, rehearsal: rehearsal?.json ?? .null)
        return report
    }

    /// The verify step's result in the summary's and evidence's shape; `.null` when it did not run.
    private var verificationJSON: JSONValue {
        guard let export, let verificationFailures else { return .null }
        return export.verificationJSON(failures: verificationFailures)
    }

    private mutating func perform(_ step: PipelineStep) -> StepOutcome {
        switch step {
        case .export: runExport()
        case .verify: runVerify()
        case .pack: runPack()
        case .install: runInstall()
        case .rehearse: runRehearse()
        case .sign: runSign()
        case .publish: runPublish()
        }
    }

    /// The failure of a step that needs the bearer credential the definition names when its variable is unset.
    private var missingBearer: StepOutcome? {
        guard let variable = source.definition.bearerEnvironmentVariable, source.bearer == nil else { return nil }
        return .failed(
            rule: "missing_credential",
            message: "the delta source's bearer variable $\(variable) is not set (auth.bearer_env)")
    }

    private mutating func runExport() -> StepOutcome {
        if let missingBearer { return missingBearer }
        let token = source.bearer?.value
        let events = self.events
        let done = DeltaRowCounter()
        do {
            let report = try DeltaExporter.export(
                definition: source.definition, bearerToken: token, to: seedPath, options: deltaOptions
            ) { event in
                guard case .entityDone(_, let rows) = event else { return }
                events(.progress(.export, PipelineProgress(unit: .rows, done: done.add(rows), total: nil)))
            }
            export = report
            return .passed(rows: report.totalRows, bytes: report.bytes)
        } catch {
            return .failed(rule: error.rule, message: error.description)
        }
    }

    /// The checks `seedkit verify` applies to a delta seed: its layout, checkpoints, every digest recomputed.
    private mutating func runVerify() -> StepOutcome {
        let failures = DeltaExporter.verify(path: seedPath)
        verificationFailures = failures
        guard failures.isEmpty else {
            return .failed(
                rule: "verification_failed", message: "\(failures.count) findings: \(failures.joined(separator: ", "))")
        }
        return .passed(rows: export?.totalRows, bytes: FileSystem.size(of: seedPath))
    }

    /// `seed.db` → `seed.db.zst`, and the patch against the publication in place when there is one.
    private mutating func runPack() -> StepOutcome {
        do {
            let report = try SeedPacker.pack(seedPath, to: packedPath, options: PackOptions(level: definition.packLevel))
            patch = try PipelinePatch.make(
                seed: seedPath, previous: publication.path(PipelinePublication.seedName), to: patchPath,
                level: definition.packLevel, checkPath: path("patch-check.db"))
            return .passed(rows: nil, bytes: report.compressedBytes)
        } catch {
            return .failed(rule: error.rule, message: error.message)
        }
    }

    /// Installs the shipped file into `device/app.db` as an app would (verified, then linked into place).
    private func runInstall() -> StepOutcome {
        do {
            try PipelineError.io { () throws(SystemError) in try FileSystem.makeDirectory(path("device")) }
            let report = try DeltaSeedInstaller.install(seed: shippedPath, to: path("device/app.db"))
            return .passed(
                rows: report.entities.reduce(0) { $0 + $1.rows }, bytes: FileSystem.size(of: path("device/app.db")))
        } catch let error as PipelineError {
            return .failed(rule: error.rule, message: error.description)
        } catch let error as DeltaInstallError {
            return .failed(rule: error.rule, message: error.description)
        } catch {
            return .failed(rule: "install_failed", message: "\(error)")
        }
    }

    /// The delta rehearsal of the shipped file: warmed from its checkpoints on a copy, compared with a full pull.
    private mutating func runRehearse() -> StepOutcome {
        if let missingBearer { return missingBearer }
        let token = source.bearer?.value
        do {
            let report = try DeltaRehearsal.run(
                seed: shippedPath, definition: source.definition, bearerToken: token, options: deltaOptions,
                temporaryDirectory: scratch)
            rehearsal = report
            let rows = report.entities.reduce(0) { $0 + $1.warmedRows }
            guard report.passed else {
                let entities = Set(report.differences.map(\.entity)).sorted().joined(separator: ", ")
                return .failed(PipelineStepFailure(
                    rule: "rehearsal_failed",
                    message: "\(report.differences.count) row(s) differ from a full pull (entity types: \(entities))"),
                    rows: rows)
            }
            return .passed(rows: rows, bytes: nil)
        } catch {
            return .failed(rule: error.rule, message: error.description)
        }
    }

    /// Reads and checks the signing key, as for a Synchro source; the publish step signs with it.
    private mutating func runSign() -> StepOutcome {
        let (key, outcome) = PipelineSigningKey.read(definition.signingKey)
        signingKey = key
        return outcome
    }

    private mutating func runPublish() -> StepOutcome {
        guard let export else { return .failed(rule: "missing_export", message: "nothing was exported") }
        let pipeline = pipelineEvidence()
        let run = self
        do {
            let (seed, kept) = try publication.publish(
                in: path("publication"), seed: seedPath, packed: definition.runs(.pack) ? packedPath : nil,
                patch: patch == nil ? nil : patchPath,
                evidence: { artifacts in Self.evidence(export, artifacts: artifacts, pipeline: pipeline) },
                signingKey: signingKey, provenance: { run.provenance($0) })
            published = seed
            let bytes = PipelinePublication.names.reduce(Int64(0)) { $0 + FileSystem.size(of: publication.path($1)) }
            return .passed(rows: seed.rows, bytes: bytes, warnings: PipelinePublication.KeptEntries.warnings(kept))
        } catch {
            return .failed(rule: error.rule, message: error.description)
        }
    }

    /// `evidence.json` of a delta publication: the delta evidence format (per entity its table, rows, digest,
    /// pages, resets), the total rows, the published artifacts and the `pipeline` member. No cursor, credential or
    /// header value.
    static func evidence(
        _ export: DeltaExportReport, artifacts: [SeedEvidence.Artifact], pipeline: JSONValue
    ) -> JSONValue {
        let entities = export.entities.map { entity in
            var members = [
                JSONMember("digest", .string(entity.digest)), JSONMember("entity", .string(entity.name)),
                JSONMember("pages", PipelineJSON.integer(Int64(entity.pages))),
                JSONMember("resets", PipelineJSON.integer(Int64(entity.resets))),
                JSONMember("rows", PipelineJSON.integer(entity.rows)), JSONMember("table", .string(entity.table)),
            ]
            if let sessions = entity.sessionsNeeded {
                members.append(JSONMember("sessions_needed", PipelineJSON.integer(Int64(sessions))))
            }
            return JSONValue.object(JSONObject(members))
        }
        return .object(JSONObject([
            JSONMember("format", .string(PublishedSeed.deltaEvidenceFormat)),
            JSONMember("rows", PipelineJSON.integer(export.totalRows)),
            JSONMember("entities", .array(entities)),
            JSONMember("artifacts", .array(artifacts.map { artifact in
                .object(JSONObject([
                    JSONMember("name", .string(artifact.name)), JSONMember("bytes", PipelineJSON.integer(artifact.bytes)),
                    JSONMember("sha256", .string(artifact.sha256)),
                ]))
            })),
            JSONMember("pipeline", pipeline),
        ]))
    }

    private func pipelineEvidence() -> JSONValue {
        .object(JSONObject([
            JSONMember("name", .string(definition.name)),
            JSONMember("fingerprint", .string(inputs.fingerprint)),
            JSONMember("inputs", inputs.json),
            JSONMember("source", .string(definition.source.kind)),
            JSONMember("steps", .array(results.map { .object(JSONObject($0.jsonMembers)) })),
            JSONMember("verification", verificationJSON),
            JSONMember("patch", patch?.json ?? .null),
            JSONMember("rehearsal", rehearsal?.json ?? .null),
        ]))
    }
}

/// Rows exported so far, for the progress events (the exporter's callback is not `mutating`-friendly).
private final class DeltaRowCounter: @unchecked Sendable {
    private var total: Int64 = 0
    func add(_ rows: Int64) -> Int64 {
        total += rows
        return total
    }
}
