import Foundation
import SQLiteKit
import SynchroStore
import SynchroProtocol
import SystemKit

/// What an export run may do.
public struct SeedExportOptions: Sendable {
    /// Rows per page, 1…1000.
    public var pageLimit: Int64
    /// Narrows the exported scopes to these IDs (each must be in the server's portable set); nil = all.
    public var scopes: [String]?
    /// Replace an existing output file.
    public var overwrite: Bool
    /// Run ``SeedVerifier`` (every publication and installer check) on the finished temporary file and
    /// publish only when it finds nothing. Only benchmarks that time the writer alone turn it off.
    public var verify: Bool

    public init(pageLimit: Int64 = 1000, scopes: [String]? = nil, overwrite: Bool = false, verify: Bool = true) {
        self.pageLimit = pageLimit
        self.scopes = scopes
        self.overwrite = overwrite
        self.verify = verify
    }
}

/// What an export produced.
public struct SeedExportReport: Sendable {
    /// One exported scope.
    public struct Scope: Sendable {
        public let id: String
        public let cardinality: Int64
        public let checksum: Checksum
    }

    public let path: String
    public let exportID: String
    public let exportManifestHash: String
    public let schema: SchemaReference
    public let scopes: [Scope]
    public let rows: Int64
    public let bytes: Int64
    public let seconds: Double
}

/// Export progress for displays and event streams.
public enum SeedExportEvent: Sendable {
    /// The export manifest was accepted: scopes and their declared cardinalities.
    case started(scopes: [(id: String, cardinality: Int64)])
    /// `rows` more rows of `scope` were verified and written.
    case rows(scope: String, rows: Int64)
    /// Every scope is written; verification runs.
    case verifying
    /// The evidence is published at `path` (``SeedExporter/exportWithEvidence(from:to:options:events:)`` only).
    case evidencePublished(path: String)
    /// The verified seed is published at `path`.
    case published(path: String)
}

/// Exports a portable seed from a source into a verified file published atomically
/// (`spec/seed-format.md` §5): nothing appears at the output path unless every check passed.
///
/// The seed is written under a hidden temporary name beside the output and published once, by
/// ``SeedExportPublication``. Crash points (``CrashPoint``), in order: `export.page` (each page written),
/// `export.committed`, `export.finalized`, `export.verified`, `export.published` (the verified seed durable under
/// its hidden name; nothing visible yet), `export.evidence_published` (with evidence only) and
/// `export.seed_published`.
public enum SeedExporter {
    /// Exports from `source` and publishes the verified seed at `output`.
    public static func export(
        from source: any SeedExportSource, to output: String, options: SeedExportOptions = SeedExportOptions(),
        events: (SeedExportEvent) -> Void = { _ in }
    ) throws(SeedExportError) -> SeedExportReport {
        try run(from: source, to: output, options: options, withEvidence: false, events: events).report
    }

    /// Exports from `source` and publishes `<output>.evidence.json` (the export, the seed's SHA-256 under the
    /// output's name, the export's time) before the verified seed at `output`, so that a seed at the output path
    /// always has its evidence. A kill between the two leaves the new evidence without a new seed: no seed at all,
    /// or with `overwrite` the previous seed, whose SHA-256 the evidence does not name.
    public static func exportWithEvidence(
        from source: any SeedExportSource, to output: String, options: SeedExportOptions = SeedExportOptions(),
        events: (SeedExportEvent) -> Void = { _ in }
    ) throws(SeedExportError) -> (evidence: SeedEvidence, path: String) {
        let result = try run(from: source, to: output, options: options, withEvidence: true, events: events)
        guard let evidence = result.evidence else { throw .storage("the evidence was not written") }
        return (evidence, SeedExportPublication.evidencePath(for: output))
    }

    private static func run(
        from source: any SeedExportSource, to output: String, options: SeedExportOptions, withEvidence: Bool,
        events: (SeedExportEvent) -> Void
    ) throws(SeedExportError) -> (report: SeedExportReport, evidence: SeedEvidence?) {
        let started = ContinuousClock.now
        guard (1...1000).contains(options.pageLimit) else {
            throw .invalidSource(reason: "the page limit must be within 1…1000")
        }
        let publication = try SeedExportPublication(output: output, overwrite: options.overwrite)
        let (manifest, export) = try currentManifests(from: source, pageLimit: options.pageLimit)
        let scopes = try selectedScopes(export, options.scopes)
        events(.started(scopes: scopes.map { ($0.id, $0.cardinality) }))

        let seed = try publication.seedFile()
        defer { seed.discard() }
        let rows = try write(
            from: source, manifest: manifest, export: export, scopes: scopes, to: seed, events: events)
        try source.finish()
        events(.verifying)
        if options.verify {
            try verifyPublication(seed.temporaryPath)
        }
        CrashPoint.reached("export.verified")
        do {
            try seed.sync()
        } catch {
            throw SeedExportError(error, output: output)
        }
        CrashPoint.reached("export.published")
        let report = SeedExportReport(
            path: output, exportID: export.exportID, exportManifestHash: export.exportManifestHash,
            schema: manifest.reference,
            scopes: scopes.map { .init(id: $0.id, cardinality: $0.cardinality, checksum: $0.checksum) },
            rows: rows, bytes: FileSystem.size(of: seed.temporaryPath), seconds: Self.seconds(since: started))
        var evidence: SeedEvidence?
        if withEvidence {
            let document = try Self.evidence(of: seed.temporaryPath, named: output, report: report)
            try publication.publishEvidence(try Self.encoded(document, path: publication.evidencePath))
            events(.evidencePublished(path: publication.evidencePath))
            CrashPoint.reached("export.evidence_published")
            evidence = document
        }
        try publication.publishSeed(seed)
        events(.published(path: output))
        CrashPoint.reached("export.seed_published")
        return (report, evidence)
    }

    /// Writes every selected scope into the temporary file, commits and finalizes it; returns the rows written.
    private static func write(
        from source: any SeedExportSource, manifest: ClientManifest, export: SeedExportManifest,
        scopes: [SeedExportManifest.Scope], to seed: DurableFile, events: (SeedExportEvent) -> Void
    ) throws(SeedExportError) -> Int64 {
        let path: String
        do {
            path = try seed.handOver()
        } catch {
            throw SeedExportError(error, output: seed.destination)
        }
        let writer = try SeedDatabaseWriter(path: path, manifest: manifest)
        let checker = SeedRecordChecker(manifest: manifest)
        var rows: Int64 = 0
        do throws(SeedExportError) {
            for scope in scopes {
                let run = ScopeExport(
                    export: export, scope: scope, schemaHashOctets: manifest.manifest.schemaHashOctets)
                rows += try run.run(source: source, checker: checker, writer: writer) { count in
                    events(.rows(scope: scope.id, rows: count))
                    CrashPoint.reached("export.page")
                }
                try writer.finishScope(scope)
            }
            try writer.commit(export: export)
            CrashPoint.reached("export.committed")
            try writer.finalize()
            CrashPoint.reached("export.finalized")
        } catch {
            writer.abandon()
            throw error
        }
        return rows
    }

    /// The evidence of the seed at `temporary`: its SHA-256 recorded under the output's name.
    private static func evidence(
        of temporary: String, named output: String, report: SeedExportReport
    ) throws(SeedExportError) -> SeedEvidence {
        let digest = try FileDigest.sha256(path: temporary)
        let artifact = SeedEvidence.Artifact(
            name: URL(fileURLWithPath: output).lastPathComponent, bytes: digest.bytes, sha256: digest.hex)
        return SeedEvidence(export: report, artifacts: [artifact], timings: [("export", report.seconds)])
    }

    private static func encoded(_ evidence: SeedEvidence, path: String) throws(SeedExportError) -> [UInt8] {
        do {
            return try evidence.encoded()
        } catch {
            throw .io(operation: "encode the evidence for", path: path, errno: EINVAL)
        }
    }

    /// The written file must pass every check a release and a device would apply.
    private static func verifyPublication(_ path: String) throws(SeedExportError) {
        let report: SeedVerificationReport
        do {
            report = try SeedVerifier.verify(path: path)
        } catch {
            throw .verification(checks: ["unusable_input"])
        }
        guard report.ok else {
            var checks: [String] = []
            for finding in report.findings where !checks.contains(finding.check.rawValue) {
                checks.append(finding.check.rawValue)
            }
            throw .verification(checks: checks)
        }
    }

    /// The source's schema manifest and a new export manifest, each strictly decoded and validated, bound
    /// to the same schema and to `pageLimit`: what an export starts from, and what a pipeline compares
    /// with a published seed to decide whether it is still current.
    public static func currentManifests(
        from source: any SeedExportSource, pageLimit: Int64
    ) throws(SeedExportError) -> (schema: ClientManifest, export: SeedExportManifest) {
        let manifest = try schemaManifest(source)
        return (manifest, try exportManifest(source, pageLimit: pageLimit, manifest: manifest))
    }

    private static func schemaManifest(_ source: any SeedExportSource) throws(SeedExportError) -> ClientManifest {
        let bytes = try source.schemaManifest()
        let manifest: ClientManifest
        do {
            manifest = try ClientManifest(bytes: bytes)
        } catch {
            throw .schemaManifest(rule: "\(error)")
        }
        for table in manifest.manifest.tables {
            guard let key = table.field(id: table.primaryKeyFieldID), [.string, .int, .int64].contains(key.type) else {
                throw .schemaManifest(rule: "unsupported_primary_key_type")
            }
        }
        return manifest
    }

    private static func exportManifest(
        _ source: any SeedExportSource, pageLimit: Int64, manifest: ClientManifest
    ) throws(SeedExportError) -> SeedExportManifest {
        let bytes = try source.exportManifest(pageLimit: pageLimit)
        let json: JSONValue
        do {
            json = try StrictJSONParser().parse(bytes)
        } catch {
            throw .malformedJSON(route: "export manifest", rule: error.rule.rawValue, offset: error.offset)
        }
        let export: SeedExportManifest
        do {
            export = try SeedExportManifest(json: json)
        } catch {
            throw .exportManifest(error)
        }
        guard export.schemaVersion == manifest.manifest.schemaVersion,
              export.schemaHash.exactlyEquals(manifest.manifest.schemaHash)
        else { throw .schemaMismatch }
        guard export.pageLimit == pageLimit else {
            throw .exportManifest(.member(rule: "page_limit_changed", member: "page_limit"))
        }
        return export
    }

    private static func selectedScopes(
        _ export: SeedExportManifest, _ requested: [String]?
    ) throws(SeedExportError) -> [SeedExportManifest.Scope] {
        guard let requested else { return export.scopes }
        for id in requested where export.scope(id) == nil {
            throw .scopeNotPortable(id)
        }
        return export.scopes.filter { scope in requested.contains { $0.exactlyEquals(scope.id) } }
    }

    static func seconds(since start: ContinuousClock.Instant) -> Double {
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }
}
