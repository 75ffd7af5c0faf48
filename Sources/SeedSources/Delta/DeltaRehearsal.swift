import Foundation
import SQLiteKit
import SynchroHTTP
import SynchroProtocol

/// What a delta rehearsal found (docs/delta-sources.md, "Rehearse").
public struct DeltaRehearsalReport: Sendable {
    /// One row that differs between the warmed copy and the full pull, named by its key only (never its values).
    public struct Difference: Sendable, Equatable {
        public enum Kind: String, Sendable { case onlyInWarmed = "only_in_warmed", onlyInFullPull = "only_in_full_pull",
                                             valuesDiffer = "values_differ" }
        public let entity: String
        /// The primary key, as the RFC 8785 text of its JSON value (`"a1"`, `42`).
        public let key: String
        public let kind: Kind
    }

    public struct Entity: Sendable {
        public let name: String
        /// Rows of the warmed copy and of the full pull.
        public let warmedRows: Int64
        public let fullRows: Int64
        /// Pages the warm pulled from the seed's checkpoint, and the full pull's pages from zero.
        public let warmPages: Int
        public let fullPages: Int
    }

    public let entities: [Entity]
    public let differences: [Difference]
    public var passed: Bool { differences.isEmpty }
}

/// A delta seed's rehearsal: install a copy as an app would (``DeltaSeedInstaller``: verified, atomic), bring it
/// current from its stored checkpoints (``DeltaWarm``: the app's first sync), then pull every entity type from zero
/// into a second database and compare the two table by table in key order. Identical tables pass; otherwise the
/// report lists every differing row by key. Writes that land between the warm and the full pull show up as
/// differences; a rehearsal is meant for a quiet source (or one whose writes the caller controls).
public enum DeltaRehearsal {
    public static func run(
        seed: String, definition: DeltaSourceDefinition, transport: (any HTTPTransport)? = nil,
        bearerToken: String?, options: DeltaExportOptions = DeltaExportOptions(), temporaryDirectory: String? = nil
    ) throws(DeltaRehearsalError) -> DeltaRehearsalReport {
        let root = (temporaryDirectory ?? NSTemporaryDirectory()) + "/.seedkit-delta-rehearsal-"
            + UUID().uuidString.lowercased()
        do {
            try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        } catch {
            throw .source(.database(rule: "io_failed", detail: "the rehearsal directory"))
        }
        defer { try? FileManager.default.removeItem(atPath: root) }
        let installed = root + "/app.db"
        do {
            _ = try DeltaSeedInstaller.install(seed: seed, to: installed)
        } catch {
            throw .install(error)
        }
        let live: any HTTPTransport
        if let transport {
            live = transport
        } else {
            do {
                live = try options.transport(for: definition)
            } catch {
                throw .source(error)
            }
        }
        let warm: DeltaWarmReport
        let full: [DeltaExportReport.Entity]
        let fullPath = root + "/full.db"
        do throws(DeltaSourceError) {
            warm = try DeltaWarm.warm(
                definition: definition, transport: live, bearerToken: bearerToken, database: installed,
                options: options)
            let fetcher = DeltaPageFetcher(
                transport: live, baseURL: definition.baseURL, bearer: bearerToken, headers: definition.headers,
                options: options)
            full = try DeltaExporter.write(definition: definition, fetcher: fetcher, to: fullPath, events: { _ in })
        } catch {
            throw .source(error)
        }
        var differences: [DeltaRehearsalReport.Difference] = []
        var entities: [DeltaRehearsalReport.Entity] = []
        for (index, entity) in definition.entities.enumerated() {
            do {
                differences += try DeltaTableComparison.compare(entity: entity, left: installed, right: fullPath)
            } catch {
                throw .source(.database(rule: "unreadable_database", detail: "entity \(entity.name)"))
            }
            entities.append(.init(
                name: entity.name, warmedRows: warm.entities[index].rows, fullRows: full[index].rows,
                warmPages: warm.entities[index].pages, fullPages: full[index].pages))
        }
        return DeltaRehearsalReport(entities: entities, differences: differences)
    }
}

/// Why a rehearsal could not run to its comparison.
public enum DeltaRehearsalError: Error, Sendable, CustomStringConvertible {
    /// The seed was not installed (nothing to rehearse).
    case install(DeltaInstallError)
    /// The warm or the full pull failed.
    case source(DeltaSourceError)

    public var rule: String {
        switch self {
        case .install(let error): error.rule
        case .source(let error): error.rule
        }
    }

    public var description: String {
        switch self {
        case .install(let error): "install: \(error)"
        case .source(let error): "\(error)"
        }
    }
}

/// Compares one entity type's table in two delta databases by a merge in primary-key order: each row as the
/// canonical line its digest hashes, so "equal" means exactly what an equal digest means.
enum DeltaTableComparison {
    static func compare(
        entity: DeltaSourceDefinition.Entity, left: String, right: String
    ) throws -> [DeltaRehearsalReport.Difference] {
        let a = try Connection(path: left, mode: .readOnly)
        defer { a.close() }
        let b = try Connection(path: right, mode: .readOnly)
        defer { b.close() }
        var leftRows = try Cursor(a, entity: entity)
        var rightRows = try Cursor(b, entity: entity)
        var differences: [DeltaRehearsalReport.Difference] = []
        var l = try leftRows.next()
        var r = try rightRows.next()
        while l != nil || r != nil {
            switch (l, r) {
            case (let x?, let y?) where x.order == y.order:
                if x.line != y.line { differences.append(.init(entity: entity.name, key: x.key, kind: .valuesDiffer)) }
                l = try leftRows.next()
                r = try rightRows.next()
            case (let x?, let y?) where x.order.lexicographicallyPrecedes(y.order):
                differences.append(.init(entity: entity.name, key: x.key, kind: .onlyInWarmed))
                l = try leftRows.next()
            case (let x?, nil):
                differences.append(.init(entity: entity.name, key: x.key, kind: .onlyInWarmed))
                l = try leftRows.next()
            case (_, let y?):
                differences.append(.init(entity: entity.name, key: y.key, kind: .onlyInFullPull))
                r = try rightRows.next()
            case (nil, nil):
                break
            }
        }
        return differences
    }

    /// The rows of one table in key order: the key's text, an order key matching SQLite's (integers by value,
    /// text by its UTF-8 octets, as the BINARY collation), and the row's canonical line.
    struct Cursor {
        struct Row {
            let key: String
            let order: [UInt8]
            let line: [UInt8]
        }

        let statement: Statement
        let entity: DeltaSourceDefinition.Entity

        init(_ connection: Connection, entity: DeltaSourceDefinition.Entity) throws {
            let list = entity.columns.map { SQLiteIdentifier.quote($0.name) }.joined(separator: ", ")
            statement = try connection.prepare(
                "SELECT \(list) FROM \(SQLiteIdentifier.quote(entity.table)) ORDER BY "
                    + SQLiteIdentifier.quote(entity.primaryKey))
            self.entity = entity
        }

        mutating func next() throws -> Row? {
            guard try statement.step() else { return nil }
            let values = try (0..<entity.columns.count).map { index in try statement.value(at: index) }
            var json: [JSONValue] = []
            for (index, column) in entity.columns.enumerated() {
                guard let value = DeltaColumnCodec.jsonValue(values[index], column: column) else {
                    throw DeltaSourceError.database(rule: "value_type", detail: "entity \(entity.name)")
                }
                json.append(value)
            }
            let key = values[entity.keyIndex]
            let order: [UInt8] = switch key {
            case .integer(let number): withUnsafeBytes(of: (UInt64(bitPattern: number) ^ (1 << 63)).bigEndian, Array.init)
            default: Array((key.textValue ?? "").utf8)
            }
            return Row(
                key: try CanonicalJSON.string(json[entity.keyIndex]), order: order,
                line: try CanonicalJSON.encode(.array(json)))
        }
    }
}
