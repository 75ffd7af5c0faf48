import Foundation
import SeedArtifacts
import SQLiteKit
import SystemKit

/// Why a delta seed was not installed (docs/delta-sources.md, "Install"). Nothing exists at the destination after
/// any of them.
public enum DeltaInstallError: Error, Sendable, CustomStringConvertible {
    /// Something already exists at the destination; it is never overwritten.
    case destinationExists(path: String)
    /// The seed file cannot be read or unpacked (`reason` is the pack error's or system's text).
    case unusableSeed(path: String, reason: String)
    /// The file is a SQLite database but not a delta seed (no `_delta_seed` table).
    case notADeltaSeed(path: String)
    /// The seed failed the checks `verify` applies (``DeltaExporter/verify(path:)``).
    case rejected(checks: [String])
    /// A file operation of the installation failed (`detail`: the operation, path and the system's reason).
    case io(detail: String)

    public var rule: String {
        switch self {
        case .destinationExists: "destination_exists"
        case .unusableSeed: "unusable_seed"
        case .notADeltaSeed: "not_a_delta_seed"
        case .rejected: "seed_rejected"
        case .io: "io"
        }
    }

    public var description: String {
        switch self {
        case .destinationExists(let path): "\(path) exists; an install never replaces a database (destination_exists)"
        case .unusableSeed(let path, let reason): "\(path) is not a usable seed file: \(reason)"
        case .notADeltaSeed(let path): "\(path) is not a delta seed (no _delta_seed table)"
        case .rejected(let checks): "the delta seed failed its checks: \(checks.joined(separator: ", "))"
        case .io(let detail): detail
        }
    }
}

/// Installs a delta seed as an app's database: the seed (a database, or a packed `.zst` unpacked on the way) is
/// copied under a hidden name beside the destination, verified there by every check `verify` applies, made durable,
/// and published with `link()` so that an existing database is never replaced and a crash leaves either nothing or
/// the complete verified seed at the destination (``DurableFile``).
public enum DeltaSeedInstaller {
    /// What was installed: per entity type its table and rows.
    public struct Report: Sendable {
        public let destination: String
        public let entities: [(entity: String, table: String, rows: Int64)]
    }

    public static func install(seed: String, to destination: String) throws(DeltaInstallError) -> Report {
        for suffix in SeedExportPublication.sidecarSuffixes + [""] where FileSystem.exists(destination + suffix) {
            throw .destinationExists(path: destination + suffix)
        }
        let (directory, name) = FileSystem.split(destination)
        let prefix = directory == "." ? "" : directory.hasSuffix("/") ? directory : directory + "/"
        let temporary = prefix + ".\(name).delta-install-\(UUID().uuidString.lowercased())"
        let file = DurableFile(
            adopting: temporary, destination: destination, replacing: false,
            companions: SeedExportPublication.sidecarSuffixes)
        defer { file.discard() }
        if SeedPacker.isZstdFrame(path: seed) {
            do throws(PackError) {
                _ = try SeedPacker.unpack(seed, to: temporary, options: UnpackOptions(requireSQLiteDatabase: true))
            } catch {
                throw .unusableSeed(path: seed, reason: "\(error)")
            }
        } else {
            do {
                try FileManager.default.copyItem(atPath: seed, toPath: temporary)
            } catch {
                throw .unusableSeed(path: seed, reason: "cannot be copied")
            }
        }
        guard DeltaExporter.isDeltaSeed(path: temporary) else { throw .notADeltaSeed(path: seed) }
        let failures = DeltaSeedLayout.verify(path: temporary)
        guard failures.isEmpty else { throw .rejected(checks: failures) }
        let entities = (try? DeltaSeedLayout.tables(path: temporary)) ?? []
        CrashPoint.reached("install.verified")
        do {
            try file.publish()
        } catch {
            if error.isAlreadyExists { throw .destinationExists(path: destination) }
            throw .io(detail: "\(error)")
        }
        CrashPoint.reached("install.published")
        return Report(destination: destination, entities: entities)
    }
}

extension DeltaSeedLayout {
    /// Each entity type's table and stored row count, in entity order.
    static func tables(path: String) throws -> [(entity: String, table: String, rows: Int64)] {
        let connection = try Connection(path: path, mode: .readOnly)
        defer { connection.close() }
        return try connection.rows(
            "SELECT e.entity, e.table_name, c.row_count FROM _delta_entities e JOIN _delta_checkpoints c "
                + "USING (entity) ORDER BY e.entity"
        ).map { ($0[0].textValue ?? "", $0[1].textValue ?? "", $0[2].integerValue ?? 0) }
    }
}

/// Which kind of seed a file holds, without unpacking a packed one in full: a delta seed's bookkeeping tables are
/// created before any row, so they are within the first megabyte of its database.
enum DeltaSeedProbe {
    static let prefixBytes = 1 << 20

    static func isDeltaSeed(path: String) -> Bool {
        guard SeedPacker.isZstdFrame(path: path) else { return hasDeltaTable(path) }
        guard let prefix = PackedPrefix.bytes(of: path, count: prefixBytes) else { return false }
        let probe = NSTemporaryDirectory() + "/.seedkit-probe-\(UUID().uuidString.lowercased()).db"
        defer { for suffix in ["", "-journal"] { try? FileManager.default.removeItem(atPath: probe + suffix) } }
        guard FileManager.default.createFile(atPath: probe, contents: Data(prefix)) else { return false }
        return hasDeltaTable(probe)
    }

    private static func hasDeltaTable(_ path: String) -> Bool {
        guard let connection = try? Connection(path: path, mode: .readOnly) else { return false }
        defer { connection.close() }
        return (try? connection.tableExists("_delta_seed")) ?? false
    }
}
