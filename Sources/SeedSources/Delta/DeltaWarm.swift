import Foundation
import SeedArtifacts
import SQLiteKit
import SynchroHTTP
import SynchroProtocol

/// What a warm did, per entity type.
public struct DeltaWarmReport: Sendable {
    public struct Entity: Sendable {
        public let name: String
        public let rows: Int64
        /// Pages pulled by this warm (the first one may be empty: the database was already current).
        public let pages: Int
        public let resets: Int
    }

    public let entities: [Entity]
}

/// Brings an installed delta seed current, as an app would on its first launch (docs/delta-sources.md, "Warm"):
/// per entity type, from the cursor in `_delta_checkpoints`, the same page rules as an export, each page applied in
/// one transaction with the checkpoint it advances to, so a kill or failure leaves the database at its last
/// durably applied page and the next warm resumes there. Once an entity type is current its digest and row count
/// are recomputed, so a warmed database still verifies.
///
/// The definition must describe the database: the same entity types with the same tables, keys, columns and paging
/// shape as `_delta_entities` records (`definition_mismatch` otherwise, before any request).
public enum DeltaWarm {
    public static func warm(
        definition: DeltaSourceDefinition, bearerToken: String?, database: String,
        options: DeltaExportOptions = DeltaExportOptions(), events: (DeltaExportEvent) -> Void = { _ in }
    ) throws(DeltaSourceError) -> DeltaWarmReport {
        let transport = try options.transport(for: definition)
        return try warm(
            definition: definition, transport: transport, bearerToken: bearerToken, database: database,
            options: options, events: events)
    }

    public static func warm(
        definition: DeltaSourceDefinition, transport: any HTTPTransport, bearerToken: String?, database: String,
        options: DeltaExportOptions = DeltaExportOptions(), events: (DeltaExportEvent) -> Void = { _ in }
    ) throws(DeltaSourceError) -> DeltaWarmReport {
        guard FileManager.default.fileExists(atPath: database) else {
            throw .database(rule: "database_missing", detail: database)
        }
        guard DeltaExporter.isDeltaSeed(path: database), !SeedPacker.isZstdFrame(path: database) else {
            throw .database(rule: "not_a_delta_seed", detail: database)
        }
        let connection: Connection
        do {
            connection = try Connection(path: database, mode: .readWrite)
        } catch {
            throw .database(rule: "unreadable_database", detail: database)
        }
        defer { connection.close() }
        let fetcher = DeltaPageFetcher(
            transport: transport, baseURL: definition.baseURL, bearer: bearerToken, headers: definition.headers,
            options: options)
        let starts = try checkpoints(connection, definition: definition)
        var entities: [DeltaWarmReport.Entity] = []
        for (entity, start) in zip(definition.entities, starts) {
            var pull = DeltaEntityPull(entity: entity, connection: connection, fetcher: fetcher)
            pull.boundary = "warm"
            let outcome = try pull.run(from: start, events: events)
            let digest = try DeltaSeedLayout.seal(connection, entity: entity)
            entities.append(.init(
                name: entity.name, rows: digest.rows, pages: outcome.pages - start.pages,
                resets: outcome.resets - start.resets))
            events(.entityDone(entity: entity.name, rows: digest.rows))
        }
        return DeltaWarmReport(entities: entities)
    }

    /// Each entity type's stored checkpoint, after checking that the database holds what the definition describes.
    private static func checkpoints(
        _ connection: Connection, definition: DeltaSourceDefinition
    ) throws(DeltaSourceError) -> [DeltaEntityPull.Outcome] {
        var starts: [DeltaEntityPull.Outcome] = []
        do {
            let declared = try connection.rows("SELECT entity FROM _delta_entities ORDER BY entity")
                .compactMap { $0[0].textValue }
            guard declared == definition.entities.map(\.name).sorted() else {
                throw DeltaSourceError.database(rule: "definition_mismatch", detail: "entity types")
            }
            for entity in definition.entities {
                let paging = if case .changes = entity.paging { "changes" } else { "list" }
                let row = try connection.rows(
                    "SELECT e.table_name, e.primary_key, e.columns, e.paging, c.cursor, c.server_time, c.pages, "
                        + "c.resets FROM _delta_entities e LEFT JOIN _delta_checkpoints c USING (entity) "
                        + "WHERE e.entity = ?", [.text(entity.name)]
                ).first ?? []
                guard row.count == 8, row[0].textValue == entity.table, row[1].textValue == entity.primaryKey,
                      row[2].textValue == DeltaSeedLayout.columnsText(entity.columns), row[3].textValue == paging
                else { throw DeltaSourceError.database(rule: "definition_mismatch", detail: "entity \(entity.name)") }
                guard let cursor = row[4].textValue else {
                    throw DeltaSourceError.database(rule: "missing_checkpoint", detail: "entity \(entity.name)")
                }
                var start = DeltaEntityPull.Outcome(cursor: cursor, serverTime: row[5].textValue)
                start.pages = Int(row[6].integerValue ?? 0)
                start.resets = Int(row[7].integerValue ?? 0)
                starts.append(start)
            }
        } catch let error as DeltaSourceError {
            throw error
        } catch {
            throw .database(rule: "unreadable_database", detail: "\(error)")
        }
        return starts
    }
}
