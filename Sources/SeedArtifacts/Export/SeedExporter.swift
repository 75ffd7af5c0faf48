import Foundation
import SQLiteKit
import SynchroStore
import SynchroProtocol

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
}

/// Exports a portable seed from a source into a verified file published atomically
/// (`spec/seed-format.md` §5): nothing appears at the output path unless every check passed.
public enum SeedExporter {
    public static func export(
        from source: any SeedExportSource, to output: String, options: SeedExportOptions = SeedExportOptions(),
        events: (SeedExportEvent) -> Void = { _ in }
    ) throws(SeedExportError) -> SeedExportReport {
        let started = ContinuousClock.now
        guard (1...1000).contains(options.pageLimit) else {
            throw .invalidSource(reason: "the page limit must be within 1…1000")
        }
        let publication = try SeedPublication(output: output, overwrite: options.overwrite)
        let (manifest, export) = try currentManifests(from: source, pageLimit: options.pageLimit)
        let scopes = try selectedScopes(export, options.scopes)
        events(.started(scopes: scopes.map { ($0.id, $0.cardinality) }))

        let temporary = try publication.temporaryPath()
        do throws(SeedExportError) {
            let writer = try SeedDatabaseWriter(path: temporary, manifest: manifest)
            var checker = SeedRecordChecker(manifest: manifest)
            var rows: Int64 = 0
            do throws(SeedExportError) {
                for scope in scopes {
                    let run = ScopeExport(export: export, scope: scope, schemaHashOctets: manifest.manifest.schemaHashOctets)
                    rows += try run.run(source: source, checker: &checker, writer: writer) { count in
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
            events(.verifying)
            if options.verify {
                try verifyPublication(temporary)
            }
            CrashPoint.reached("export.verified")
            try publication.publish(temporary)
            CrashPoint.reached("export.published")
            return SeedExportReport(
                path: output, exportID: export.exportID, exportManifestHash: export.exportManifestHash,
                schema: manifest.reference,
                scopes: scopes.map { .init(id: $0.id, cardinality: $0.cardinality, checksum: $0.checksum) },
                rows: rows, bytes: SeedPublication.size(of: output),
                seconds: Self.seconds(since: started))
        } catch {
            SeedPublication.remove(family: temporary)
            throw error
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
