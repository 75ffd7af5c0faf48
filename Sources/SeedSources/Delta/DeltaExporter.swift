import Foundation
import SeedArtifacts
import SQLiteKit
import SynchroHTTP
import SynchroProtocol
import SystemKit

/// What a delta export produced, per entity type and in total.
public struct DeltaExportReport: Sendable {
    public struct Entity: Sendable {
        public let name: String
        public let table: String
        public let rows: Int64
        public let digest: String
        public let pages: Int
        public let resets: Int
        /// Seed 004 only: the sessions an app with this definition needs to pull what the export pulled
        /// (`ceil(pages / maxPagesPerSession)`); more than one is reported, never truncated.
        public let sessionsNeeded: Int?
    }

    public let path: String
    public let evidencePath: String
    public let entities: [Entity]
    public let bytes: Int64
    public let sha256: String
    public let milliseconds: Int64
}

/// Builds a warm-start seed from a delta-sync API (docs/delta-sources.md): every entity type pulled to its end
/// into a new database under a hidden name beside the output, digests computed from the stored rows, the file
/// verified by the same checks `verify` applies, then `<out>.evidence.json` and the seed published atomically
/// (``SeedExportPublication``, as for Synchro seeds). Nothing appears at the output on any failure.
public enum DeltaExporter {
    /// Exports over libcurl to the definition's base URL.
    public static func export(
        definition: DeltaSourceDefinition, bearerToken: String?, to output: String,
        options: DeltaExportOptions = DeltaExportOptions(), events: (DeltaExportEvent) -> Void = { _ in }
    ) throws(DeltaSourceError) -> DeltaExportReport {
        let transport = try options.transport(for: definition)
        return try export(
            definition: definition, transport: transport, bearerToken: bearerToken, to: output, options: options,
            events: events)
    }

    /// Exports over `transport` (tests inject faults here).
    public static func export(
        definition: DeltaSourceDefinition, transport: any HTTPTransport, bearerToken: String?, to output: String,
        options: DeltaExportOptions = DeltaExportOptions(), events: (DeltaExportEvent) -> Void = { _ in }
    ) throws(DeltaSourceError) -> DeltaExportReport {
        let started = ContinuousClock.now
        let publication: SeedExportPublication
        let seed: DurableFile
        do {
            publication = try SeedExportPublication(
                output: output, overwrite: options.overwrite, evidenceArtifactName: Self.evidenceArtifactName)
            seed = try publication.seedFile()
        } catch {
            throw .output(error)
        }
        defer { seed.discard() }
        let path: String
        do {
            path = try seed.handOver()
        } catch {
            throw .output(SeedExportError(error, output: output))
        }
        let fetcher = DeltaPageFetcher(
            transport: transport, baseURL: definition.baseURL, bearer: bearerToken, headers: definition.headers,
            options: options)
        let entities = try write(definition: definition, fetcher: fetcher, to: path, events: events)
        let failures = DeltaSeedLayout.verify(path: path)
        guard failures.isEmpty else { throw .verification(checks: failures) }
        CrashPoint.reached("export.verified")
        let digest: (hex: String, bytes: Int64)
        do {
            try seed.sync()
            digest = try FileDigest.sha256(path: path)
            CrashPoint.reached("export.published")
        } catch let error as SeedExportError {
            throw .output(error)
        } catch {
            throw .output(.io(operation: "sync", path: path, errno: (error as? SystemError)?.code ?? 0))
        }
        let elapsed = ContinuousClock.now - started
        let report = DeltaExportReport(
            path: output, evidencePath: publication.evidencePath, entities: entities, bytes: digest.bytes,
            sha256: digest.hex,
            milliseconds: elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000)
        do {
            try publication.publishEvidence(try evidence(report, name: URL(fileURLWithPath: output).lastPathComponent))
            CrashPoint.reached("export.evidence_published")
            try publication.publishSeed(seed)
            CrashPoint.reached("export.seed_published")
        } catch {
            throw .output(error)
        }
        return report
    }

    /// Creates the layout at `path` and pulls every entity type from zero (the export, and a rehearsal's full pull).
    static func write(
        definition: DeltaSourceDefinition, fetcher: DeltaPageFetcher, to path: String,
        events: (DeltaExportEvent) -> Void
    ) throws(DeltaSourceError) -> [DeltaExportReport.Entity] {
        let connection: Connection
        do {
            connection = try Connection(path: path)
            // The file is a scratch copy until its publication: a kill or a failure discards it (nothing is resumed
            // from it), and the exporter syncs it once before publishing. So a page's transaction needs its
            // atomicity (the rollback of a bad page, kept in memory) but not its own trips to the disk
            // (docs/decisions.md, "A delta export's scratch seed is synced once"). Neither mode is stored in the file.
            _ = try connection.setJournalMode(.memory)
            try connection.setSynchronous(.off)
            try DeltaSeedLayout.create(connection, definition: definition)
        } catch {
            throw .output(.storage("\(error)"))
        }
        defer { connection.close() }
        var entities: [DeltaExportReport.Entity] = []
        for entity in definition.entities {
            let pull = DeltaEntityPull(entity: entity, connection: connection, fetcher: fetcher)
            let outcome = try pull.run(events: events)
            let digest = try DeltaSeedLayout.seal(connection, entity: entity)
            var sessions: Int?
            if case .list(_, _, _, _, _, let cap, _) = entity.paging {
                sessions = max(1, (outcome.pages + cap - 1) / cap)
            }
            entities.append(.init(
                name: entity.name, table: entity.table, rows: digest.rows, digest: digest.hex, pages: outcome.pages,
                resets: outcome.resets, sessionsNeeded: sessions))
            events(.entityDone(entity: entity.name, rows: digest.rows))
        }
        return entities
    }

    static let evidenceFormat = "seedkit-delta-evidence/1"

    /// The artifact name a delta evidence object records (nil: not delta evidence), so that evidence left by a
    /// delta export killed before its seed's publication is recognised as an orphan and replaced without `--force`.
    @Sendable static func evidenceArtifactName(_ evidence: JSONObject) -> String? {
        guard evidence["format"]?.stringValue == evidenceFormat else { return nil }
        return evidence["artifact"]?.objectValue?["name"]?.stringValue
    }

    /// `<out>.evidence.json`: the seed's name, size and SHA-256, and per entity its table, rows, digest, pages,
    /// resets and (seed 004) the sessions an app needs — no cursor, credential or header.
    static func evidence(_ report: DeltaExportReport, name: String) throws(SeedExportError) -> [UInt8] {
        let entities = report.entities.map { entity in
            var members = [
                JSONMember("digest", .string(entity.digest)), JSONMember("entity", .string(entity.name)),
                JSONMember("pages", .number(JSONNumber(Int64(entity.pages)))),
                JSONMember("resets", .number(JSONNumber(Int64(entity.resets)))),
                JSONMember("rows", .number(JSONNumber(entity.rows))), JSONMember("table", .string(entity.table)),
            ]
            if let sessions = entity.sessionsNeeded {
                members.append(JSONMember("sessions_needed", .number(JSONNumber(Int64(sessions)))))
            }
            return JSONValue.object(JSONObject(members))
        }
        let document = JSONValue.object(JSONObject([
            JSONMember("artifact", .object(JSONObject([
                JSONMember("bytes", .number(JSONNumber(report.bytes))), JSONMember("name", .string(name)),
                JSONMember("sha256", .string(report.sha256)),
            ]))),
            JSONMember("entities", .array(entities)),
            JSONMember("format", .string(evidenceFormat)),
            JSONMember("milliseconds", .number(JSONNumber(report.milliseconds))),
        ]))
        do {
            return try CanonicalJSON.encode(document) + [0x0A]
        } catch {
            throw .io(operation: "encode the evidence for", path: report.evidencePath, errno: EINVAL)
        }
    }
}

extension DeltaExporter {
    /// The checks `verify` applies to a delta seed (``DeltaSeedLayout``): empty when the seed is sound. A packed
    /// seed (`.zst`) is unpacked into a temporary file first (bounded and checksum-verified, as for Synchro seeds).
    public static func verify(path: String) -> [String] {
        guard SeedPacker.isZstdFrame(path: path) else { return DeltaSeedLayout.verify(path: path) }
        let target = NSTemporaryDirectory() + "/.seedkit-unpacked-\(UUID().uuidString.lowercased()).db"
        defer { for suffix in ["", "-journal"] { try? FileManager.default.removeItem(atPath: target + suffix) } }
        do throws(PackError) {
            _ = try SeedPacker.unpack(path, to: target, options: UnpackOptions(requireSQLiteDatabase: true))
        } catch {
            return ["unpack_failed"]
        }
        return DeltaSeedLayout.verify(path: target)
    }

    /// Whether the file at `path` — a SQLite database, or a packed one — is a delta seed (has the `_delta_seed`
    /// table), not a Synchro seed.
    public static func isDeltaSeed(path: String) -> Bool {
        DeltaSeedProbe.isDeltaSeed(path: path)
    }
}
