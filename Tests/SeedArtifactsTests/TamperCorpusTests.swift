import Foundation
import SQLiteKit
import SeedArtifacts
import Testing
import _SeedkitTestSupport

/// One way to damage a real exported seed, the publication finding `seedkit verify` must report for it, and —
/// where the device installer's validation of the migrated copy can see the damage at all — the `installer_*`
/// finding it must report too.
struct Tamper: Sendable, CustomTestStringConvertible {
    let name: String
    let check: SeedCheck
    let installerCheck: SeedCheck?
    let apply: @Sendable (String) throws -> Void

    var testDescription: String { name }

    init(_ name: String, _ check: SeedCheck, installer: SeedCheck?, sql: String) {
        self.init(name, check, installer: installer) { try VerifyFixtures.modify($0, sql) }
    }

    init(
        _ name: String, _ check: SeedCheck, installer: SeedCheck?,
        apply: @escaping @Sendable (String) throws -> Void
    ) {
        self.name = name
        self.check = check
        installerCheck = installer
        self.apply = apply
    }

    /// A valid checksum object that is nobody's digest.
    static let foreignChecksum = (try? VerifyFixtures.checksumText(Array(repeating: 0x5A, count: 32))) ?? ""

    /// The rows of the second export page in identity order: int64 product keys sort numerically and the
    /// products table ID sorts before the categories one (shorter length prefix), so page 2 is products 101–200.
    static let secondPage = "BETWEEN (SELECT min(id) + \(VerifyFixtures.pageLimit) FROM products) "
        + "AND (SELECT min(id) + \(2 * VerifyFixtures.pageLimit - 1) FROM products)"

    static let corpus: [Tamper] = [
        Tamper("a removed row", .versionWithoutRow, installer: .installerMaterializedRows,
               sql: "DELETE FROM products WHERE id = (SELECT min(id) FROM products)"),
        Tamper("an added row", .rowWithoutVersion, installer: .installerMaterializedRows,
               sql: "INSERT INTO categories (id, name) VALUES (9999, 'Extra')"),
        Tamper("an altered row value", .rowDigestMismatch, installer: .installerScopeDigest,
               sql: "UPDATE products SET title = title || ' (changed)' WHERE id = (SELECT min(id) FROM products)"),
        Tamper("a row value stored as a BLOB", .rowValueInvalid, installer: .installerScopeDigest,
               sql: "UPDATE products SET title = CAST(title AS BLOB) WHERE id = (SELECT min(id) FROM products)"),
        Tamper("a boolean stored as a REAL", .rowValueInvalid, installer: .installerScopeDigest,
               sql: "UPDATE products SET active = 0.5 WHERE id = (SELECT min(id) FROM products)"),
        Tamper("a decimal that is not canonical", .rowValueInvalid, installer: .installerScopeDigest,
               sql: "UPDATE products SET price = price || '0' WHERE id = (SELECT min(id) FROM products)"),
        Tamper("a row value that is not UTF-8", .sqliteError, installer: .installerSQLiteError,
               sql: "UPDATE products SET title = CAST(x'61C3' AS TEXT) WHERE id = (SELECT min(id) FROM products)"),
        Tamper("an altered row checksum", .rowDigestMismatch, installer: .installerScopeRow, sql: """
            UPDATE _synchro_row_versions SET row_checksum = '\(foreignChecksum)'
            WHERE rowid = (SELECT min(rowid) FROM _synchro_row_versions WHERE table_name = 'products')
            """),
        Tamper("an altered scope checksum", .scopeChecksumMismatch, installer: .installerScopeDigest,
               sql: "UPDATE _synchro_scopes SET checksum = '\(foreignChecksum)', "
                   + "local_checksum = '\(foreignChecksum)'"),
        Tamper("an altered receipt cardinality", .cardinalityMismatch, installer: .installerScopeDigest,
               sql: "UPDATE _synchro_seed_receipts SET cardinality = cardinality - 1"),
        Tamper("a skipped page", .cardinalityMismatch, installer: .installerScopeDigest, sql: """
            DELETE FROM _synchro_row_versions
            WHERE table_name = 'products' AND CAST(record_id AS INTEGER) \(secondPage);
            DELETE FROM _synchro_scope_rows
            WHERE table_name = 'products' AND CAST(record_id AS INTEGER) \(secondPage);
            DELETE FROM products WHERE id \(secondPage);
            """),
        Tamper("a row version of a table outside the manifest", .rowVersionInvalid, installer: .installerRowVersion,
               sql: """
                   INSERT INTO _synchro_row_versions (table_name, record_id, server_version, row_checksum)
                   VALUES ('ghosts', '1', 'v1', '\(foreignChecksum)')
                   """),
        Tamper("an edge of a table outside the manifest", .edgeInvalid, installer: .installerScopeRow, sql: """
            INSERT INTO _synchro_scope_rows (scope_id, table_name, record_id, checksum, generation)
            VALUES ((SELECT scope_id FROM _synchro_scopes), 'ghosts', '1', '\(String(repeating: "ab", count: 32))', 0)
            """),
        Tamper("an edge of a scope without a scope row", .edgeInvalid, installer: .installerScopeRow, sql: """
            INSERT INTO _synchro_scope_rows (scope_id, table_name, record_id, checksum, generation)
            SELECT 'ghost-scope', table_name, record_id, checksum, 0 FROM _synchro_scope_rows
            WHERE table_name = 'categories'
            """),
        Tamper("a missing receipt", .receiptMissing, installer: .installerScope,
               sql: "DELETE FROM _synchro_seed_receipts"),
        Tamper("an extra receipt", .receiptExtra, installer: .installerScope, sql: """
            INSERT INTO _synchro_seed_receipts
            SELECT 'catalog-extra', receipt, schema_version, schema_hash, cardinality, checksum
            FROM _synchro_seed_receipts
            """),
        Tamper("a user-scoped scope without receipt", .receiptMissing, installer: .installerScope, sql: """
            INSERT INTO _synchro_scopes SELECT 'user:alice', NULL, checksum, 0, local_checksum FROM _synchro_scopes;
            INSERT INTO _synchro_scope_rows
            SELECT 'user:alice', table_name, record_id, checksum, 0 FROM _synchro_scope_rows
            WHERE table_name = 'categories';
            """),
        Tamper("a user-scoped scope with a copied receipt", .receiptBinding, installer: .installerScopeDigest, sql: """
            INSERT INTO _synchro_scopes SELECT 'user:alice', NULL, checksum, 0, local_checksum FROM _synchro_scopes;
            INSERT INTO _synchro_scope_rows
            SELECT 'user:alice', table_name, record_id, checksum, 0 FROM _synchro_scope_rows
            WHERE table_name = 'categories';
            INSERT INTO _synchro_seed_receipts
            SELECT 'user:alice', receipt, schema_version, schema_hash, cardinality, checksum
            FROM _synchro_seed_receipts;
            """),
        Tamper("a receipt row for another schema", .receiptBinding, installer: .installerReceipt, sql: """
            UPDATE _synchro_seed_receipts
            SET schema_version = schema_version + 1, schema_hash = '\(String(repeating: "0", count: 64))'
            """),
        Tamper("a receipt token from another export", .receiptBinding, installer: nil) { path in
            let second = try VerifyFixtures.exports.get().second
            let stored = try VerifyFixtures.scalar(second, "SELECT receipt FROM _synchro_seed_receipts")
            guard let receipt = stored?.textValue else {
                throw VerifyFixtures.ExportFailure(description: "the second export has no receipt")
            }
            try VerifyFixtures.modify(path, "UPDATE _synchro_seed_receipts SET receipt = '\(receipt)'")
        },
        Tamper("a leftover pending change", .queueNotEmpty, installer: .installerWorkTableNotEmpty, sql: """
            INSERT INTO _synchro_pending_changes
                (record_id, table_name, operation, base_updated_at, client_updated_at, local_revision)
            VALUES ('1', 'categories', 'update', NULL, '2025-01-01T00:00:00.000000Z', 1)
            """),
        Tamper("a leftover push batch", .queueNotEmpty, installer: .installerWorkTableNotEmpty, sql: """
            INSERT INTO _synchro_push_batches (batch_id, request_json, pending_json, schema_json, state, created_at)
            VALUES ('batch-1', '{}', '[]', '[]', 'sealed', '2025-01-01T00:00:00.000000Z')
            """),
        Tamper("a missing migration identifier", .migrationIdentifiers, installer: nil,
               sql: "DELETE FROM grdb_migrations WHERE identifier = 'synchro_v8_sealed_push_batches'"),
        Tamper("an extra migration identifier", .migrationIdentifiers, installer: .installerOpen,
               sql: "INSERT INTO grdb_migrations (identifier) VALUES ('synchro_v99_unknown')"),
        Tamper("a changed trigger", .triggerSQL, installer: nil, sql: """
            DROP TRIGGER "_synchro_cdc_insert_products";
            CREATE TRIGGER "_synchro_cdc_insert_products" AFTER INSERT ON "products" BEGIN SELECT 1; END;
            """),
        Tamper("a -wal sidecar", .sidecarPresent, installer: nil) { path in
            _ = FileManager.default.createFile(atPath: path + "-wal", contents: Data(repeating: 0, count: 32))
        },
        Tamper("a corrupted page", .integrityCheck, installer: nil) { path in
            // The middle page's b-tree header and cell pointers: whatever the page size, no free space.
            let pageSize = try #require(VerifyFixtures.scalar(path, "PRAGMA page_size")?.integerValue)
            let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
            defer { try? handle.close() }
            let size = try handle.seekToEnd()
            try handle.seek(toOffset: size / 2 / UInt64(pageSize) * UInt64(pageSize))
            try handle.write(contentsOf: Data(repeating: 0xA5, count: 2048))
        },
    ]
}

@Suite("Tamper corpus: every damaged seed is rejected by verify and by install")
struct TamperCorpusTests {
    @Test("the clean export passes every check with zero findings", .timeLimit(.minutes(2)))
    func cleanSeedPasses() throws {
        let exports = try VerifyFixtures.exports.get()
        let report = try SeedVerifier.verify(path: exports.first)
        #expect(report.findings == [])
        #expect(report.ok)
        #expect(Int64(report.rows) == exports.rows)
        #expect(report.checks > 40)
    }

    @Test("edges stored out of identity order still give every scope digest: the audit sorts them then",
          .timeLimit(.minutes(2)))
    func edgesOutOfOrderPass() throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-tamper")
        let seed = try VerifyFixtures.cleanCopy(in: directory)
        try VerifyFixtures.modify(seed, """
            CREATE TEMP TABLE reversed AS SELECT * FROM _synchro_scope_rows ORDER BY rowid DESC;
            DELETE FROM _synchro_scope_rows;
            INSERT INTO _synchro_scope_rows SELECT * FROM reversed ORDER BY rowid;
            DROP TABLE reversed;
            """)
        let first = try VerifyFixtures.scalar(seed, "SELECT record_id FROM _synchro_scope_rows WHERE rowid = 1")
        let last = try VerifyFixtures.scalar(
            seed, "SELECT record_id FROM _synchro_scope_rows ORDER BY rowid DESC LIMIT 1")
        #expect(first != last)
        let report = try SeedVerifier.verify(path: seed)
        #expect(report.findings == [])
        #expect(report.ok)
        // Out of order and one edge digest changed: reported, and the scope digest, read beside the rows in
        // sorted order, is still the rows' own.
        try VerifyFixtures.modify(seed, """
            UPDATE _synchro_scope_rows SET checksum = '\(String(repeating: "0", count: 64))' WHERE rowid = 7
            """)
        let damaged = try SeedVerifier.verify(path: seed)
        #expect(damaged.contains(.edgeDigestMismatch) && !damaged.contains(.scopeDigestMismatch),
                "findings: \(damaged.findings)")
    }

    @Test("a tampered seed is rejected by verify and by install, and nothing is installed",
          .timeLimit(.minutes(2)), arguments: Tamper.corpus)
    func tamperedSeedIsRejected(_ tamper: Tamper) throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-tamper")
        let seed = try VerifyFixtures.cleanCopy(in: directory)
        try tamper.apply(seed)
        let leftovers = try VerifyFixtures.strayFiles(in: directory, keeping: [])

        let report = try SeedVerifier.verify(path: seed)
        #expect(!report.ok)
        #expect(report.contains(tamper.check), "findings: \(report.findings)")
        if let installerCheck = tamper.installerCheck {
            #expect(report.contains(installerCheck), "findings: \(report.findings)")
        }

        let destination = directory.path("app.db")
        do {
            _ = try SeedInstaller.install(seed: seed, to: destination)
            Issue.record("the tampered seed was installed")
        } catch {
            guard case .invalidSeed(let rejection) = error else {
                Issue.record("unexpected error \(error)")
                return
            }
            #expect(rejection.contains(tamper.check), "findings: \(rejection.findings)")
        }
        #expect(!FileManager.default.fileExists(atPath: destination))
        #expect(try VerifyFixtures.strayFiles(in: directory, keeping: []) == leftovers)
    }

    @Test("row versions and edges outside the manifest are named by their table or scope")
    func rowsOutsideTheManifestAreNamed() throws {
        let expected = [
            "a row version of a table outside the manifest":
                "1 row versions name table ghosts, which the manifest does not have",
            "an edge of a table outside the manifest": "the edge names table ghosts, which the manifest does not have",
            "an edge of a scope without a scope row": "provenance edges name a scope that has no _synchro_scopes row",
        ]
        for tamper in Tamper.corpus where expected[tamper.name] != nil {
            let directory = try TemporaryDirectory(prefix: "seedkit-tamper")
            let seed = try VerifyFixtures.cleanCopy(in: directory)
            try tamper.apply(seed)
            let report = try SeedVerifier.verify(path: seed)
            let message = try #require(expected[tamper.name])
            #expect(report.findings.contains { $0.check == tamper.check && $0.message.hasSuffix(message) },
                    "\(tamper.name): \(report.findings)")
        }
    }

    @Test("a truncated seed is unusable input for verify and for install")
    func truncatedSeedIsUnusable() throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-tamper")
        let seed = try VerifyFixtures.cleanCopy(in: directory)
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: seed))
        let size = try handle.seekToEnd()
        try handle.truncate(atOffset: size / 2 + 1000)
        try handle.close()

        #expect {
            _ = try SeedVerifier.verify(path: seed)
        } throws: { error in
            guard case .truncated = error as? SeedInputError else { return false }
            return true
        }
        let destination = directory.path("app.db")
        #expect {
            _ = try SeedInstaller.install(seed: seed, to: destination)
        } throws: { error in
            guard case .unusableSeed(.truncated) = error as? SeedInstallError else { return false }
            return true
        }
        #expect(!FileManager.default.fileExists(atPath: destination))
        #expect(try VerifyFixtures.strayFiles(in: directory, keeping: []) == ["seed.db"])
    }

    @Test("findings name the table and rowid of a damaged row, never its values")
    func findingsAreValueFree() throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-tamper")
        let seed = try VerifyFixtures.cleanCopy(in: directory)
        let marker = "SECRET-VALUE-7731"
        try VerifyFixtures.modify(seed, """
            UPDATE products SET title = '\(marker)' WHERE id = (SELECT min(id) FROM products);
            UPDATE products SET stock = 'not a number' WHERE id = (SELECT max(id) FROM products);
            """)
        let key = try VerifyFixtures.scalar(seed, "SELECT min(id) FROM products")?.integerValue ?? 0
        let report = try SeedVerifier.verify(path: seed)
        let mismatch = report.findings.first { $0.check == .rowDigestMismatch }
        #expect(mismatch?.table == "products")
        #expect(mismatch?.row == 1, "the first row in rowid order")
        #expect(report.contains(.rowValueInvalid))
        let rendered = report.findings.map(\.description).joined() + String(describing: report.json)
        #expect(!rendered.contains(marker))
        #expect(!rendered.contains("not a number"))
        #expect(!rendered.contains(String(key)), "record IDs are row values and are not printed")
    }

    @Test("a seed with every row altered lists a bounded number of findings per check")
    func findingsAreBounded() throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-tamper")
        let seed = try VerifyFixtures.cleanCopy(in: directory)
        try VerifyFixtures.modify(seed, "UPDATE products SET title = title || '!'")
        let report = try SeedVerifier.verify(
            path: seed, options: SeedVerificationOptions(includeInstallerChecks: false, maximumFindingsPerCheck: 5))
        let mismatches = report.findings.filter { $0.check == .rowDigestMismatch }
        #expect(mismatches.count == 6)
        #expect(mismatches.last?.message.contains("\(VerifyFixtures.products - 5) more findings") == true)
    }
}
