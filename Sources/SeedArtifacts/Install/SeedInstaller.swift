import Foundation
import Glibc
import SynchroStore
import SystemKit

/// How ``SeedInstaller`` works.
public struct SeedInstallOptions: Sendable {
    /// Where a `.zst` seed is unpacked before it is checked; nil for the destination's directory.
    public var temporaryDirectory: String?
    /// A `.zst` seed may unpack to at most this many bytes.
    public var maximumUnpackedBytes: Int64
    /// At most this many findings are listed per check in a rejection.
    public var maximumFindingsPerCheck: Int
    /// The UUID of the temporary name `.<name>.seed-<UUID>`.
    public var uuids: UUIDSource
    /// The time and SQLite work the checks may take before the seed is refused with `budget_exceeded`.
    public var budget: VerificationBudget

    /// The defaults: unpack next to the destination, 4 GiB unpack limit, 20 findings per check, random UUIDs.
    public init(
        temporaryDirectory: String? = nil, maximumUnpackedBytes: Int64 = PackOptions.defaultMaximumOutputBytes,
        maximumFindingsPerCheck: Int = 20, uuids: UUIDSource = .random,
        budget: VerificationBudget = VerificationBudget()
    ) {
        self.budget = budget
        self.temporaryDirectory = temporaryDirectory
        self.maximumUnpackedBytes = maximumUnpackedBytes
        self.maximumFindingsPerCheck = maximumFindingsPerCheck
        self.uuids = uuids
    }
}

/// What an install did.
public struct SeedInstallReport: Sendable {
    /// The database file now in place.
    public let destination: String
    /// The checks the seed passed (no findings).
    public let verification: SeedVerificationReport
}

/// Installs a seed as a device's initial database exactly as the upstream Swift SDK does
/// (`spec/seed-format.md` §7.1), and only when no database exists yet: copy to `.<name>.seed-<UUID>` next to the
/// destination, open it with the client store (the remaining migrations run), close it, delete its sidecars,
/// validate it with a plain read connection, re-check that the destination still does not exist, then publish
/// with `link()` + `unlink()` — which fails if a database appeared meanwhile, so nothing is ever overwritten. On
/// any failure the temporary file family is removed.
///
/// Before publishing it also runs every publication check of the exporter (§6) on the seed file itself — the
/// checks a device skips but that catch what its migration would erase (a changed capture trigger, a stray
/// sidecar, a receipt bound to another export) — so a seed is installed only when ``SeedVerifier`` accepts it.
public enum SeedInstaller {
    /// Installs the seed at `seed` (`.db`, or zstd-packed `.db.zst`) as the database at `destination`.
    public static func install(
        seed: String, to destination: String, options: SeedInstallOptions = SeedInstallOptions()
    ) throws(SeedInstallError) -> SeedInstallReport {
        try refuseExisting(destination)
        let directory = URL(fileURLWithPath: destination).deletingLastPathComponent().path
        let source: SeedSource
        do {
            source = try SeedSource(path: seed, temporaryDirectory: options.temporaryDirectory ?? directory,
                                    maximumUnpackedBytes: options.maximumUnpackedBytes)
        } catch {
            throw .unusableSeed(error)
        }
        defer { source.discard() }
        let staged = SeedStaging.stagedPath(nextTo: destination, uuid: options.uuids.next())
        let verification = SeedVerificationOptions(
            expectedSnapshotComplete: 1, includeInstallerChecks: true,
            maximumFindingsPerCheck: options.maximumFindingsPerCheck, budget: options.budget)
        do throws(SeedInstallError) {
            let run = SeedCheckRun.run(seed: source.databasePath, staged: .file(staged), options: verification)
            if let failure = run.stagingFailure {
                throw .io(operation: failure.operation, path: failure.path, errno: failure.errno)
            }
            guard run.report.ok else { throw .invalidSeed(run.report) }
            CrashPoint.reached("install.validated")
            try publish(staged, to: destination)
            CrashPoint.reached("install.published")
            return SeedInstallReport(destination: destination, verification: run.report)
        } catch {
            do throws(SeedStaging.IOFailure) {
                try SeedStaging.removeFamily(staged)
            } catch let cleanup {
                throw .cleanupFailed(path: cleanup.path, errno: cleanup.errno, cause: error)
            }
            throw error
        }
    }

    /// A database, or a sidecar a database would pick up, already at the destination.
    private static func refuseExisting(_ destination: String) throws(SeedInstallError) {
        let family = [destination] + SeedStaging.sidecarSuffixes.map { destination + $0 }
        for path in family where FileSystem.exists(path) {
            throw .destinationExists(path: path)
        }
    }

    /// §7.1 step 4: re-check the destination, then hard-link the staged file into place (``DurableFile``: synced
    /// first; atomic, and refused by the file system if a database appeared meanwhile) and remove the temporary name.
    /// Once the database is in place, a temporary name that survives (a second link to it) changes nothing.
    private static func publish(_ staged: String, to destination: String) throws(SeedInstallError) {
        try refuseExisting(destination)
        let file = DurableFile(
            adopting: staged, destination: destination, replacing: false, companions: SeedStaging.sidecarSuffixes)
        do {
            try file.publish()
        } catch {
            if error.isAlreadyExists { throw .destinationExists(path: destination) }
            throw .io(operation: error.operation, path: error.path, errno: error.code)
        }
    }
}
