import Foundation
import SQLiteKit
import SynchroClient
import Testing
import _SeedkitTestSupport
@testable import SeedArtifacts

@Suite("Seed verifier: the throwaway copy in memory, and the rows read along their versions")
struct StagingInMemoryTests {
    /// The installer findings of `seed` staged in memory and staged as a file, and whether the memory staging fell
    /// back to its file.
    private func stagedBothWays(
        _ seed: String, in directory: TemporaryDirectory
    ) throws -> (memory: [SeedFinding], file: [SeedFinding], fellBack: Bool) {
        let memory = FindingCollector(limit: 20)
        let fallback = directory.path(".verify.db.seed-fallback")
        try SeedStaging.stage(
            seed: seed, target: .memory(name: "/seedkit-test-\(UUID().uuidString)", fallback: fallback),
            collector: memory)
        let fellBack = FileManager.default.fileExists(atPath: fallback)
        try SeedStaging.removeFamily(fallback)
        let file = FindingCollector(limit: 20)
        let staged = directory.path(".verify.db.seed-file")
        try SeedStaging.stage(seed: seed, at: staged, collector: file)
        try SeedStaging.removeFamily(staged)
        return (memory.finish().findings, file.finish().findings, fellBack)
    }

    @Test("a seed migrated in memory yields exactly the installer findings of a seed migrated in a file")
    func memoryAndFileStagingAgree() throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-memory")
        let clean = try VerifyFixtures.cleanCopy(in: directory, name: "clean.db")
        let cleanRun = try stagedBothWays(clean, in: directory)
        #expect(!cleanRun.fellBack, "SQLite here interprets file URIs, so the copy stays in memory")
        #expect(cleanRun.memory == [] && cleanRun.file == [])

        let tampered = try VerifyFixtures.cleanCopy(in: directory, name: "tampered.db")
        try VerifyFixtures.modify(tampered, """
            UPDATE products SET title = title || '!' WHERE id = (SELECT max(id) FROM products);
            INSERT INTO _synchro_rejected_mutations VALUES ('m', 'products', '1', 's', 'c', NULL, NULL, NULL, 'a', 'b');
            """)
        let tamperedRun = try stagedBothWays(tampered, in: directory)
        #expect(!tamperedRun.fellBack)
        #expect(!tamperedRun.memory.isEmpty)
        #expect(tamperedRun.memory == tamperedRun.file)
        #expect(try VerifyFixtures.strayFiles(in: directory, keeping: []) == ["clean.db", "tampered.db"])
    }

    @Test("a seed whose header says WAL is staged in its fallback file, with the same findings")
    func walHeaderFallsBackToAFile() throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-memory")
        let seed = try VerifyFixtures.cleanCopy(in: directory)
        let connection = try Connection(path: seed, mode: .readWrite)
        #expect(try connection.setJournalMode(.wal) == .wal)
        connection.close()
        SeedStaging.removeSidecars(of: seed)
        let run = try stagedBothWays(seed, in: directory)
        #expect(run.fellBack)
        #expect(run.memory == run.file)
        #expect(run.memory == [])
    }

    @Test("the verifier leaves no file behind when the copy is in memory")
    func verifyWritesNoCopy() throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-memory")
        let seed = try VerifyFixtures.cleanCopy(in: directory)
        let scratch = directory.path("scratch")
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: false)
        let report = try SeedVerifier.verify(path: seed, options: SeedVerificationOptions(temporaryDirectory: scratch))
        #expect(report.ok)
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch) == [])
    }

    @Test("row versions and edges stored in another order than the rows are still matched to their rows")
    func versionsOutOfOrder() throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-memory")
        let seed = try VerifyFixtures.cleanCopy(in: directory)
        try VerifyFixtures.modify(seed, """
            CREATE TEMP TABLE v AS SELECT * FROM _synchro_row_versions ORDER BY rowid DESC;
            DELETE FROM _synchro_row_versions;
            INSERT INTO _synchro_row_versions SELECT * FROM v ORDER BY rowid;
            CREATE TEMP TABLE e AS SELECT * FROM _synchro_scope_rows ORDER BY record_id;
            DELETE FROM _synchro_scope_rows;
            INSERT INTO _synchro_scope_rows SELECT * FROM e ORDER BY rowid;
            """)
        let clean = try SeedVerifier.verify(path: seed)
        #expect(clean.findings == [])

        try VerifyFixtures.modify(
            seed, "UPDATE products SET title = title || '!' WHERE id = (SELECT max(id) FROM products)")
        let tampered = try SeedVerifier.verify(path: seed, options: .publication(snapshotComplete: 1))
        #expect(tampered.findings.contains {
            $0.check == .rowDigestMismatch && $0.table == "products" && $0.row == Int64(VerifyFixtures.products)
        })
    }

    @Test("an edge whose record ID is not the canonical decimal text of a key names no row")
    func nonCanonicalEdgeRecordID() throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-memory")
        let seed = try VerifyFixtures.cleanCopy(in: directory)
        try VerifyFixtures.modify(seed, """
            UPDATE _synchro_scope_rows SET record_id = '0' || record_id
            WHERE rowid = (SELECT min(rowid) FROM _synchro_scope_rows WHERE table_name = 'products')
            """)
        let report = try SeedVerifier.verify(path: seed, options: .publication(snapshotComplete: 1))
        #expect(report.findings.contains { $0.check == .edgeWithoutRow && $0.table == "_synchro_scope_rows" })
        #expect(report.findings.contains { $0.check == .rowWithoutEdge && $0.table == "products" })
    }

    @Test("a table the migration rebuilt is proven equal to the seed's cell for cell; one changed row disproves it")
    func rebuiltTablesAreProvenByCells() throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-memory")
        let seed = try VerifyFixtures.cleanCopy(in: directory)
        // A trigger on the edge table makes v13 copy it (DROP TABLE drops the trigger) instead of keeping it.
        try VerifyFixtures.modify(
            seed, "CREATE TRIGGER seedkit_test_edges AFTER DELETE ON _synchro_scope_rows BEGIN SELECT 1; END")
        let staged = try VerifyFixtures.migratedCopy(of: seed, named: ".app.db.seed-cells", in: directory)

        func proven(_ table: String) throws -> Bool {
            try VerifyFixtures.pageIdentity(copy: staged, seed: seed) { $0.provesByCells(table: table, on: $1) }
        }
        #expect(try !VerifyFixtures.pageIdentity(copy: staged, seed: seed) {
            $0.proves(table: "_synchro_scope_rows", on: $1)
        }, "v13 copied the edges to other pages")
        #expect(try proven("_synchro_scope_rows"), "v13 copies the edges in rowid order")
        #expect(try proven("_synchro_scopes"))
        #expect(try proven("products"))
        #expect(try !proven("no_such_table"))

        try VerifyFixtures.modify(staged, "UPDATE _synchro_scope_rows SET generation = 1 WHERE rowid = 7")
        SeedStaging.removeSidecars(of: staged)
        #expect(try !proven("_synchro_scope_rows"), "one changed record")
        try VerifyFixtures.modify(staged, """
            UPDATE _synchro_scope_rows SET generation = 0 WHERE rowid = 7;
            DELETE FROM _synchro_scope_rows WHERE rowid = (SELECT max(rowid) FROM _synchro_scope_rows);
            """)
        SeedStaging.removeSidecars(of: staged)
        #expect(try !proven("_synchro_scope_rows"), "one row fewer")
    }

    @Test("record IDs parse as integers only in their canonical decimal spelling")
    func canonicalIntegers() {
        let cases: [(String, Int64?)] = [
            ("0", 0), ("7", 7), ("-7", -7), ("123456", 123_456),
            ("9223372036854775807", .max), ("-9223372036854775808", .min),
            ("9223372036854775808", nil), ("-9223372036854775809", nil),
            ("", nil), ("-", nil), ("-0", nil), ("007", nil), ("+7", nil), (" 7", nil), ("7 ", nil), ("7.0", nil),
            ("1e3", nil), ("٣", nil),
        ]
        for (text, expected) in cases {
            var text = text
            let parsed = text.withUTF8 { SeedRowAudit.canonicalInteger($0) }
            #expect(parsed == expected, "\(text.debugDescription)")
        }
    }
}
