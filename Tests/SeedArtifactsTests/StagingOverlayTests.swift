import Foundation
import Glibc
import SQLiteKit
import Testing
import _SeedkitTestSupport
@testable import SeedArtifacts

/// A seed above the in-memory bound is migrated through a copy-on-write overlay (``CopyOnWriteFile``) instead of a
/// byte copy: the bound is lowered to 0 here, so the small fixture seeds take the large seeds' path.
@Suite("Seed verifier: a large seed's throwaway copy is an overlay that writes only what the migration changes")
struct StagingOverlayTests {
    /// The whole verification of `seed` with the copy as an overlay (the in-memory bound lowered to 0), and with the
    /// installer's byte copy; the octets the overlay file held on the disk once the checks had run.
    private func verifiedBothWays(
        _ seed: String, in directory: TemporaryDirectory
    ) throws -> (overlay: SeedVerificationReport, copy: SeedVerificationReport, overlayBytes: Int64) {
        let options = SeedVerificationOptions()
        let fallback = directory.path(".verify.db.seed-overlay")
        let overlayRun = SeedCheckRun.run(
            seed: seed, staged: .memory(name: "/seedkit-test-\(UUID().uuidString)", fallback: fallback, maximumBytes: 0),
            options: options)
        #expect(overlayRun.stagingFailure == nil)
        let overlayBytes = Self.allocatedBytes(fallback)
        try SeedStaging.removeFamily(fallback)
        let staged = directory.path(".verify.db.seed-copy")
        let copyRun = SeedCheckRun.run(seed: seed, staged: .file(staged), options: options)
        #expect(copyRun.stagingFailure == nil)
        try SeedStaging.removeFamily(staged)
        return (overlayRun.report, copyRun.report, overlayBytes)
    }

    /// The octets the file system holds for `path` (a hole holds none); -1 when there is no such file.
    private static func allocatedBytes(_ path: String) -> Int64 {
        var info = stat()
        guard stat(path, &info) == 0 else { return -1 }
        return Int64(info.st_blocks) * 512
    }

    private static func size(_ path: String) throws -> Int64 {
        (try FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.int64Value ?? 0
    }

    @Test("a seed above the in-memory bound is verified without a copy: the overlay holds a fraction of the seed",
          .timeLimit(.minutes(2)))
    func largeSeedIsNotCopied() throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-overlay")
        let seed = try VerifyFixtures.cleanCopy(in: directory)
        // 8 MiB of free pages that the migration never reads: the seed grows, its content does not.
        try VerifyFixtures.modify(seed, """
            CREATE TABLE ballast(b BLOB);
            INSERT INTO ballast WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 128)
                SELECT zeroblob(65536) FROM n;
            DROP TABLE ballast;
            """)
        let seedBytes = try Self.size(seed)
        #expect(seedBytes > 8 << 20)
        let run = try verifiedBothWays(seed, in: directory)
        #expect(run.overlay.findings == run.copy.findings)
        #expect(run.overlay.ok == run.copy.ok)
        #expect(run.overlay.rows == run.copy.rows)
        #expect(run.overlayBytes >= 0, "the overlay file existed: the in-memory path was not taken")
        #expect(run.overlayBytes < seedBytes / 8,
                "the overlay held \(run.overlayBytes) octets of a \(seedBytes)-octet seed")
        #expect(try VerifyFixtures.strayFiles(in: directory, keeping: []) == ["seed.db"])
    }

    @Test("the clean seed, which the client migrates from the baseline layout, passes through the overlay")
    func cleanSeedPasses() throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-overlay")
        let seed = try VerifyFixtures.cleanCopy(in: directory)
        let run = try verifiedBothWays(seed, in: directory)
        #expect(run.overlay.findings == [])
        #expect(run.overlay.ok && run.copy.ok)
        #expect(run.overlay.rows == run.copy.rows)
        #expect(run.overlay.checks == run.copy.checks)
    }

    @Test("seeds of other page sizes (blocks written in part, pages spanning blocks) get the byte copy's verdict",
          arguments: [512, 1024, 8192, 65536])
    func otherPageSizes(pageSize: Int) throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-overlay")
        let seed = try VerifyFixtures.cleanCopy(in: directory)
        let connection = try Connection(path: seed, mode: .readWrite)
        try connection.execute("PRAGMA page_size = \(pageSize); VACUUM")
        connection.close()
        let run = try verifiedBothWays(seed, in: directory)
        #expect(run.overlay.findings == run.copy.findings)
        #expect(run.overlay.findings == [])
    }

    @Test("a seed whose header says WAL is migrated through the overlay with the byte copy's verdict")
    func walHeader() throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-overlay")
        let seed = try VerifyFixtures.cleanCopy(in: directory)
        let connection = try Connection(path: seed, mode: .readWrite)
        #expect(try connection.setJournalMode(.wal) == .wal)
        connection.close()
        SeedStaging.removeSidecars(of: seed)
        let run = try verifiedBothWays(seed, in: directory)
        #expect(run.overlay.findings == run.copy.findings)
    }

    @Test("a tampered seed above the in-memory bound gets exactly the byte copy's findings",
          .timeLimit(.minutes(2)), arguments: Tamper.corpus)
    func tamperedSeedsAgree(_ tamper: Tamper) throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-overlay")
        let seed = try VerifyFixtures.cleanCopy(in: directory)
        try tamper.apply(seed)
        let run = try verifiedBothWays(seed, in: directory)
        #expect(!run.overlay.ok)
        #expect(run.overlay.findings == run.copy.findings)
        #expect(run.overlay.checks == run.copy.checks)
    }

    @Test("a hostile seed above the in-memory bound gets exactly the byte copy's findings",
          .timeLimit(.minutes(2)), arguments: HostileSeed.corpus)
    func hostileSeedsAgree(_ hostile: HostileSeed) throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-overlay")
        let seed = try VerifyFixtures.cleanCopy(in: directory)
        try VerifyFixtures.modify(seed, hostile.sql)
        let run = try verifiedBothWays(seed, in: directory)
        #expect(!run.overlay.ok)
        #expect(run.overlay.findings == run.copy.findings)
    }
}
