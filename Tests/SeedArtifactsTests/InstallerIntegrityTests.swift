import Foundation
import SQLiteKit
@testable import SeedArtifacts
import Testing
import _SeedkitTestSupport

/// The installer's `PRAGMA integrity_check` of the migrated copy (§7.1 validation item 1), completed from a
/// `quick_check` when the publication checks run alongside: every damage the device's full check finds must still
/// be reported, whichever part of the shortcut would have to see it.
@Suite("Installer integrity check: a quick_check completed by the seed's check and page proofs")
struct InstallerIntegrityTests {
    @Test("every table of a clean migrated copy that the migration left alone is proven with its indexes")
    func untouchedTablesAreProvenWithTheirIndexes() throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-integrity")
        let seed = try VerifyFixtures.cleanCopy(in: directory)
        let staged = try VerifyFixtures.migratedCopy(of: seed, named: ".app.db.seed-proof", in: directory)
        var proven = Set<String>()
        _ = try VerifyFixtures.pageIdentity(copy: staged, seed: seed) { identity, connection in
            proven = identity.tablesProvenWithIndexes(on: connection)
            return true
        }
        for table in ["products", "categories", "_synchro_row_versions", "_synchro_scope_rows", "_synchro_meta"] {
            #expect(proven.contains(table), "\(table)")
        }
        // v13 rebuilds the scope table; the later migrations add indexes to the queue.
        #expect(!proven.contains("_synchro_scopes"))
        #expect(!proven.contains("_synchro_pending_changes"))
        #expect(!proven.contains("sqlite_sequence"), "created by the migration")

        // One changed octet in an index page disproves its table alone.
        try VerifyFixtures.damageFirstIndexEntry(staged, index: "idx_synchro_scope_rows_record")
        _ = try VerifyFixtures.pageIdentity(copy: staged, seed: seed) { identity, connection in
            proven = identity.tablesProvenWithIndexes(on: connection)
            return true
        }
        #expect(!proven.contains("_synchro_scope_rows"))
        #expect(proven.contains("_synchro_row_versions"))
    }

    @Test("the page walk follows an index's overflow chains: one changed overflow octet disproves the index")
    func indexWalkComparesOverflowPages() throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-integrity")
        let seed = try VerifyFixtures.cleanCopy(in: directory)
        // A record ID of two pages' length spills the entries of both edge indexes to overflow chains.
        let pageSize = try #require(VerifyFixtures.scalar(seed, "PRAGMA page_size")?.integerValue)
        try VerifyFixtures.modify(seed, """
            UPDATE _synchro_scope_rows SET record_id = record_id || hex(zeroblob(\(pageSize)))
            WHERE rowid = (SELECT min(rowid) FROM _synchro_scope_rows)
            """)
        let staged = try VerifyFixtures.migratedCopy(of: seed, named: ".app.db.seed-overflow", in: directory)
        let index = "idx_synchro_scope_rows_record"
        func walk(_ name: String) throws -> SeedPageIdentity.Walk? {
            try VerifyFixtures.walk(name, copy: staged, seed: seed)
        }
        #expect(try walk(index) == .identical)
        let overflow = try #require(VerifyFixtures.scalar(staged, """
            SELECT max(pageno) FROM dbstat WHERE name = '\(index)' AND pagetype = 'overflow'
            """)?.integerValue)
        try VerifyFixtures.flipOctet(in: staged, at: (overflow - 1) * pageSize + pageSize / 2)
        #expect(try walk(index) == .different)
        #expect(try walk("_synchro_scope_rows") == .identical)
        #expect(try walk("sqlite_autoindex__synchro_scope_rows_1") == .identical)
    }

    @Test("an index entry damaged in the seed is reported by the publication and the installer checks alike")
    func damageInTheSeedIsReportedForTheCopyToo() throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-integrity")
        let seed = try VerifyFixtures.cleanCopy(in: directory)
        try VerifyFixtures.damageFirstIndexEntry(seed, index: "idx_synchro_scope_rows_record")
        // The damage is one only the full check sees, in a table the migration keeps page for page.
        #expect(try VerifyFixtures.integrityCheck(seed, .quick) == ["ok"])
        #expect(try VerifyFixtures.integrityCheck(seed, .full) != ["ok"])

        let report = try SeedVerifier.verify(path: seed)
        #expect(report.findings.contains { $0.check == .integrityCheck })
        #expect(report.findings.contains { $0.check == .installerIntegrityCheck && $0.message.contains("index") })

        let destination = directory.path("app.db")
        let error = try #require(throws: SeedInstallError.self) {
            try SeedInstaller.install(seed: seed, to: destination)
        }
        guard case .invalidSeed(let rejected) = error else {
            Issue.record("unexpected \(error)")
            return
        }
        #expect(rejected.findings.contains { $0.check == .installerIntegrityCheck })
        #expect(!FileManager.default.fileExists(atPath: destination))
    }

    @Test("an index entry damaged in the copy only is reported, in a table proven by pages and in a rewritten one",
          arguments: ["idx_synchro_scope_rows_record", "sqlite_autoindex__synchro_row_versions_1",
                      "sqlite_autoindex__synchro_scopes_1", "sqlite_autoindex_grdb_migrations_1"])
    func damageInTheCopyOnlyIsReported(index: String) throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-integrity")
        let seed = try VerifyFixtures.cleanCopy(in: directory)
        let staged = try VerifyFixtures.migratedCopy(of: seed, named: ".app.db.seed-damaged", in: directory)
        #expect(try VerifyFixtures.installerFindings(seed: seed, copy: staged) == [])

        try VerifyFixtures.damageFirstIndexEntry(staged, index: index)
        #expect(try VerifyFixtures.integrityCheck(staged, .quick) == ["ok"])
        #expect(try VerifyFixtures.integrityCheck(seed, .full) == ["ok"])
        let findings = try VerifyFixtures.installerFindings(seed: seed, copy: staged)
        #expect(findings.contains { $0.check == .installerIntegrityCheck && $0.message.contains(index) })
    }
}

extension VerifyFixtures {
    /// ``SeedPageIdentity/walk(root:)`` of the b-tree of table or index `name` of `copy` against `seed`; nil when
    /// there is no such b-tree.
    static func walk(_ name: String, copy: String, seed: String) throws -> SeedPageIdentity.Walk? {
        var outcome: SeedPageIdentity.Walk?
        _ = try pageIdentity(copy: copy, seed: seed) { identity, connection in
            let root = try? connection.scalar(
                "SELECT rootpage FROM main.sqlite_schema WHERE type IN ('table', 'index') AND name = ?1",
                [.text(name)])
            outcome = root?.integerValue.map { identity.walk(root: $0) }
            return true
        }
        return outcome
    }

    /// Inverts the lowest bit of the octet at `offset` of the file at `path`.
    static func flipOctet(in path: String, at offset: Int64) throws {
        let handle = try #require(FileHandle(forUpdatingAtPath: path))
        defer { try? handle.close() }
        try handle.seek(toOffset: UInt64(offset))
        let original = try #require(try handle.read(upToCount: 1))
        try handle.seek(toOffset: UInt64(offset))
        try handle.write(contentsOf: [original[0] ^ 0x01])
    }

    /// The lines of integrity check `scope` of the database at `path`.
    static func integrityCheck(_ path: String, _ scope: Connection.IntegrityCheckScope) throws -> [String] {
        let connection = try Connection(path: path, mode: .readOnly)
        defer { connection.close() }
        return try connection.integrityCheck(scope)
    }

    /// The installer findings for `copy` validated beside the publication checks of `seed`.
    static func installerFindings(seed: String, copy: String) throws -> [SeedFinding] {
        let shared = PublicationHandoff()
        var publication = PublicationVerifier(path: seed, options: SeedVerificationOptions(), shared: shared)
        publication.run()
        let collector = FindingCollector(limit: 20)
        InstalledSeedValidator(path: copy, collector: collector, seed: (seed, shared)).run()
        return collector.finish().findings
    }

    /// Points the first entry of index `index` at another row: the rowid that ends its record (serial type 8 or 9,
    /// the constants 0 and 1, swapped in the record header; otherwise the low bit of its last octet) changes, so
    /// every b-tree stays well formed and in order, but the index no longer holds exactly its table's rows.
    static func damageFirstIndexEntry(_ path: String, index: String) throws {
        let pageSize = try #require(scalar(path, "PRAGMA page_size")?.integerValue.map(Int.init))
        let page = try #require(scalar(path, """
            SELECT min(pageno) FROM dbstat WHERE name = '\(index)' AND pagetype = 'leaf'
            """)?.integerValue.map(Int.init))
        let handle = try #require(FileHandle(forUpdatingAtPath: path))
        defer { try? handle.close() }
        let start = UInt64((page - 1) * pageSize)
        try handle.seek(toOffset: start)
        var bytes = [UInt8](try #require(try handle.read(upToCount: pageSize)))
        let header = page == 1 ? 100 : 0
        try #require(bytes[header] == 0x0A, "an index leaf page")
        var offset = Int(bytes[header + 8]) << 8 | Int(bytes[header + 9])
        func varint() -> Int {
            var value = 0
            for _ in 0..<9 {
                let byte = bytes[offset]
                offset += 1
                value = value << 7 | Int(byte & 0x7F)
                if byte & 0x80 == 0 { break }
            }
            return value
        }
        _ = varint()
        let record = offset
        let headerSize = varint()
        var types: [(type: Int, at: Int)] = []
        while offset < record + headerSize {
            let at = offset
            types.append((varint(), at))
        }
        func size(_ type: Int) -> Int {
            switch type {
            case 0, 8, 9: 0
            case 1...4: type
            case 5: 6
            case 6, 7: 8
            default: (type - (type % 2 == 0 ? 12 : 13)) / 2
            }
        }
        let rowid = try #require(types.last)
        if rowid.type == 8 || rowid.type == 9 {
            bytes[rowid.at] ^= 0x01
        } else {
            let end = record + headerSize + types.map { size($0.type) }.reduce(0, +)
            bytes[end - 1] ^= 0x01
        }
        try handle.seek(toOffset: start)
        try handle.write(contentsOf: bytes)
    }
}
