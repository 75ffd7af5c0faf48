import Foundation

/// The SQLite file behind a seed path: the file itself, or — for a zstd frame — its contents unpacked (bounded,
/// checksum-verified) into a temporary file that ``discard()`` removes.
struct SeedSource {
    /// The SQLite database to check.
    let databasePath: String
    /// The temporary unpacked file, when there is one.
    private let unpacked: String?

    /// Probes `path` and unpacks a zstd frame into `temporaryDirectory` (nil: the system temporary directory).
    init(path: String, temporaryDirectory: String?, maximumUnpackedBytes: Int64) throws(SeedInputError) {
        switch try SeedFileProbe.probe(path) {
        case .sqlite:
            databasePath = path
            unpacked = nil
        case .zstd:
            let directory = temporaryDirectory ?? NSTemporaryDirectory()
            let target = URL(fileURLWithPath: directory)
                .appendingPathComponent(".seedkit-unpacked-\(UUID().uuidString.lowercased()).db").path
            do throws(PackError) {
                let options = UnpackOptions(maximumOutputBytes: maximumUnpackedBytes, requireSQLiteDatabase: true)
                _ = try SeedPacker.unpack(path, to: target, options: options)
            } catch .notSQLiteDatabase {
                try? SeedStaging.removeFamily(target)
                throw .notSQLite(path: path)
            } catch {
                try? SeedStaging.removeFamily(target)
                // A pack error's description already begins with its rule.
                throw .unpackFailed(path: path, reason: "\(error)")
            }
            do throws(SeedInputError) {
                guard try SeedFileProbe.probe(target) == .sqlite else { throw SeedInputError.notSQLite(path: path) }
            } catch {
                try? SeedStaging.removeFamily(target)
                throw Self.renamed(error, to: path)
            }
            databasePath = target
            unpacked = target
        }
    }

    /// Removes the unpacked file, if any.
    func discard() {
        if let unpacked { try? SeedStaging.removeFamily(unpacked) }
    }

    /// An error about the unpacked file, reported against the path the caller gave.
    private static func renamed(_ error: SeedInputError, to path: String) -> SeedInputError {
        switch error {
        case .truncated(_, let bytes, let expected): .truncated(path: path, bytes: bytes, expectedBytes: expected)
        case .notSQLite, .notFound, .notARegularFile, .unreadable: .notSQLite(path: path)
        default: error
        }
    }
}
