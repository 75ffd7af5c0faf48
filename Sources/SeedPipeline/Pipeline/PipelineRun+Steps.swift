import Foundation
import SeedArtifacts
import Synchronization
import SynchroClient
import SynchroProtocol
import SystemKit

extension PipelineRun {
    /// Exports one snapshot into `seed.db`; every page is checked as it streams (`spec/seed-format.md` §5).
    mutating func runExport(_ connection: PipelineSourceConnection) -> StepOutcome {
        let events = self.events
        let source = connection.exportSource
        let seedPath = seedPath
        let options = SeedExportOptions(pageLimit: definition.pageLimit, scopes: definition.scopes)
        var total: Int64 = 0
        var done: Int64 = 0
        do {
            let report = try connection.exporting { () throws(SeedExportError) in
                try SeedExporter.export(from: source, to: seedPath, options: options) { event in
                    switch event {
                    case .started(let scopes): (total, done) = (scopes.reduce(0) { $0 + $1.cardinality }, 0)
                    case .rows(_, let rows): done += rows
                    case .verifying, .evidencePublished, .published: return
                    }
                    events(.progress(.export, PipelineProgress(unit: .rows, done: done, total: total)))
                }
            }
            export = report
            return .passed(rows: report.rows, bytes: report.bytes)
        } catch {
            let exhausted = if case .transport(_, _, _, true) = error { true } else { false }
            return .failed(rule: error.rule, message: error.description, retriesExhausted: exhausted)
        }
    }

    /// Every publication check on `seed.db` (`spec/seed-format.md` §6), and the device installer's validation
    /// (§7.1) too unless the install step follows, which runs both again on the packed artifact.
    mutating func runVerify() -> StepOutcome {
        let temporary = path("verify")
        do {
            try PipelineError.io { () throws(SystemError) in try FileSystem.makeDirectory(temporary) }
            let report = try SeedVerifier.verify(
                path: seedPath,
                options: SeedVerificationOptions(
                    includeInstallerChecks: !definition.runs(.install), temporaryDirectory: temporary))
            verification = report
            guard report.ok else {
                let checks = Set(report.findings.map(\.check.name)).sorted()
                return .failed(
                    rule: "verification_failed",
                    message: "\(report.findings.count) findings: \(checks.joined(separator: ", "))",
                    findings: report.findings)
            }
            return .passed(rows: Int64(report.rows), bytes: FileSystem.size(of: seedPath))
        } catch let error as PipelineError {
            return .failed(rule: error.rule, message: error.description)
        } catch let error as SeedInputError {
            return .failed(rule: error.rule, message: error.description)
        } catch {
            return .failed(rule: "verification_failed", message: "\(error)")
        }
    }

    /// `seed.db` → `seed.db.zst` at the definition's level.
    mutating func runPack() -> StepOutcome {
        let events = self.events
        let options = PackOptions(level: definition.packLevel) { progress in
            let done = PipelineProgress(unit: .bytes, done: progress.processedBytes, total: progress.totalBytes)
            events(.progress(.pack, done))
        }
        do {
            let report = try SeedPacker.pack(seedPath, to: packedPath, options: options)
            pack = report
            try packPatch(level: definition.packLevel)
            return .passed(rows: nil, bytes: report.compressedBytes)
        } catch {
            return .failed(rule: error.rule, message: error.message)
        }
    }

    /// When a publication is in place, `seed.db.patch.zst` against its `seed.db` (``PipelinePatch``).
    private mutating func packPatch(level: Int32) throws(PackError) {
        patch = try PipelinePatch.make(
            seed: seedPath, previous: publication.path(PipelinePublication.seedName), to: patchPath, level: level,
            checkPath: path("patch-check.db"))
    }

    /// Installs `seed.db.zst` into `device/app.db` exactly as a device does (`spec/seed-format.md` §7.1).
    mutating func runInstall() -> StepOutcome {
        do {
            try PipelineError.io { () throws(SystemError) in try FileSystem.makeDirectory(path("device")) }
        } catch {
            return .failed(rule: error.rule, message: error.description)
        }
        do {
            let report = try SeedInstaller.install(
                seed: packedPath, to: devicePath, options: SeedInstallOptions(temporaryDirectory: path("device")))
            return .passed(rows: Int64(report.verification.rows), bytes: FileSystem.size(of: devicePath))
        } catch {
            return .failed(rule: error.rule, message: error.description, findings: error.findings)
        }
    }

    /// The installed copy's first sync as the test user.
    mutating func runRehearse(_ connection: PipelineSourceConnection) -> StepOutcome {
        guard let credential = connection.rehearsalCredential else {
            return .failed(rule: "missing_credential", message: "the source has no rehearsal credential")
        }
        let work = path("rehearsal")
        do {
            try PipelineError.io { () throws(SystemError) in try FileSystem.makeDirectory(work) }
        } catch {
            return .failed(rule: error.rule, message: error.description)
        }
        var options = RehearsalOptions(
            server: connection.rehearsalServer, credential: credential, appVersion: definition.rehearsal.appVersion,
            pageLimit: definition.pageLimit, rebuildCompare: definition.rehearsal.rebuildCompare)
        options.network = self.options.network
        let events = self.events
        let pulled = Mutex<Int64>(0)
        do {
            let report = try SeedRehearsal.run(installed: devicePath, workDirectory: work, options: options) { event in
                guard case .pageApplied(let phase, _, let rows) = event, phase == .pull || phase == .rebuild else {
                    return
                }
                let done = pulled.withLock { total in
                    total += Int64(rows)
                    return total
                }
                events(.progress(.rehearse, PipelineProgress(unit: .rows, done: done, total: nil)))
            }
            rehearsal = report
            let rows = Int64(report.firstSync.rowsApplied)
            guard report.passed else {
                let failure = PipelineStepFailure(rule: "rehearsal_failed", message: Self.describeFailure(report))
                return .failed(failure, rows: rows)
            }
            return .passed(rows: rows, bytes: nil)
        } catch {
            return .failed(rule: error.rule, message: error.description, retriesExhausted: error.retriesExhausted)
        }
    }

    /// Assembles the publication beside the publish directory and swaps it in.
    mutating func runPublish(_ source: RecordingExportSource) -> StepOutcome {
        guard let export else { return .failed(rule: "missing_export", message: "nothing was exported") }
        let timings = results.filter { $0.outcome == .passed }.map { (step: $0.step.rawValue, seconds: $0.seconds) }
        let pipeline = pipelineEvidence(source)
        let run = self
        do {
            let (seed, kept) = try publication.publish(
                in: path("publication"), seed: seedPath, packed: definition.runs(.pack) ? packedPath : nil,
                patch: patch == nil ? nil : patchPath,
                evidence: { artifacts in
                    let evidence = SeedEvidence(export: export, artifacts: artifacts, timings: timings).json
                    let members = (evidence.objectValue?.members ?? []) + [JSONMember("pipeline", pipeline)]
                    return .object(JSONObject(members))
                }, signingKey: signingKey, provenance: { run.provenance($0, source: source) })
            published = seed
            let bytes = PipelinePublication.names.reduce(Int64(0)) { $0 + FileSystem.size(of: publication.path($1)) }
            return .passed(rows: seed.rows, bytes: bytes, warnings: PipelinePublication.KeptEntries.warnings(kept))
        } catch {
            return .failed(rule: error.rule, message: error.description)
        }
    }

    /// The `pipeline` member of `evidence.json`: the inputs and their fingerprint (the reuse rule), the exported
    /// source state, each step's outcome, and the verification, pack and rehearsal results. No credential.
    private func pipelineEvidence(_ source: RecordingExportSource) -> JSONValue {
        .object(JSONObject([
            JSONMember("name", .string(definition.name)),
            JSONMember("fingerprint", .string(probe.inputs.fingerprint)),
            JSONMember("inputs", probe.inputs.json),
            JSONMember("source", .string(definition.source.kind)),
            JSONMember(
                "source_state",
                source.exportManifest.map { PipelineSourceState(export: $0, scopes: definition.scopes).json } ?? .null),
            JSONMember("steps", .array(results.map { .object(JSONObject($0.jsonMembers)) })),
            JSONMember("verification", verification.map { report in
                .object(JSONObject([
                    JSONMember("checks", PipelineJSON.integer(report.checks)),
                    JSONMember("rows", PipelineJSON.integer(report.rows)),
                    JSONMember("findings", PipelineJSON.integer(report.findings.count)),
                ]))
            } ?? .null),
            JSONMember("pack", pack.map { report in
                .object(JSONObject([
                    JSONMember("level", PipelineJSON.integer(Int64(definition.packLevel))),
                    JSONMember("uncompressed_bytes", PipelineJSON.integer(report.uncompressedBytes)),
                    JSONMember("compressed_bytes", PipelineJSON.integer(report.compressedBytes)),
                ]))
            } ?? .null),
            JSONMember("patch", patch?.json ?? .null),
            JSONMember("rehearsal", rehearsal.map { report in
                var members = report.json.objectValue?.members ?? []
                members.append(JSONMember("user", definition.rehearsal.user.map(JSONValue.string) ?? .null))
                return .object(JSONObject(members))
            } ?? .null),
        ]))
    }

    /// Which scopes a device would not continue, and why.
    static func describeFailure(_ report: RehearsalReport) -> String {
        let failing = report.scopes.filter { scope in
            !(scope.continued && !scope.rebuilt && scope.verified && scope.matchesRebuild != false)
        }
        guard !failing.isEmpty else { return "the rehearsal did not pass" }
        return failing.map { "scope \($0.id): \($0.outcome)" }.joined(separator: "; ")
    }
}
