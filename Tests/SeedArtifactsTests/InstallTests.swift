import Foundation
import SQLiteKit
@testable import SeedArtifacts
import SynchroClient
import SynchroProtocol
import Testing
import _SeedkitTestSupport
@testable import SynchroStore

@Suite("Seed installer: the device procedure of seed-format §7.1")
struct InstallTests {
    @Test("a clean seed installs as a migrated client store that keeps its rows, scope and receipt")
    func cleanSeedInstalls() throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-install")
        let seed = try VerifyFixtures.cleanCopy(in: directory)
        let destination = directory.path("app.db")
        let report = try SeedInstaller.install(seed: seed, to: destination)
        #expect(report.verification.ok)
        #expect(report.destination == destination)
        #expect(try VerifyFixtures.strayFiles(in: directory, keeping: []) == ["app.db", "seed.db"])

        let store = try ClientStore(configuration: ClientStoreConfiguration(path: destination, clientID: "device-1"))
        defer { store.close() }
        #expect(store.openedLayout.kind == .current)
        let inspection = try store.inspect()
        #expect(inspection.scopes.map(\.scopeID) == ["catalog"])
        #expect(inspection.clientID == nil)
        let rows = try store.query("SELECT count(*) FROM products")
        #expect(rows.first?.values.first == .integer(Int64(VerifyFixtures.products)))
    }

    @Test("an existing destination is refused and left byte for byte as it was")
    func existingDestinationIsUntouched() throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-install")
        let seed = try VerifyFixtures.cleanCopy(in: directory)
        let original: [UInt8] = Array("an application database".utf8)
        let destination = try directory.write("app.db", original)
        #expect(throws: SeedInstallError.self) { try SeedInstaller.install(seed: seed, to: destination) }
        do {
            _ = try SeedInstaller.install(seed: seed, to: destination)
        } catch {
            guard case .destinationExists(let path) = error else {
                Issue.record("unexpected error \(error)")
                return
            }
            #expect(path == destination)
        }
        #expect(Array(try Data(contentsOf: URL(fileURLWithPath: destination))) == original)
        #expect(try VerifyFixtures.strayFiles(in: directory, keeping: []) == ["app.db", "seed.db"])
    }

    @Test("a sidecar left at the destination is refused too: SQLite would apply it to the new file")
    func destinationSidecarIsRefused() throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-install")
        let seed = try VerifyFixtures.cleanCopy(in: directory)
        try directory.write("app.db-wal", [1, 2, 3])
        #expect {
            _ = try SeedInstaller.install(seed: seed, to: directory.path("app.db"))
        } throws: { error in
            guard case .destinationExists(let path) = error as? SeedInstallError else { return false }
            return path.hasSuffix("app.db-wal")
        }
        #expect(!FileManager.default.fileExists(atPath: directory.path("app.db")))
    }

    @Test("the temporary copy is named .<name>.seed-<UUID> next to the destination and removed on rejection")
    func temporaryName() throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-install")
        let seed = try VerifyFixtures.cleanCopy(in: directory)
        try VerifyFixtures.modify(seed, "UPDATE _synchro_seed_receipts SET cardinality = cardinality + 1")
        let uuid = "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b"
        #expect(SeedStaging.stagedPath(nextTo: directory.path("app.db"), uuid: uuid)
            == directory.path(".app.db.seed-\(uuid)"))
        let options = SeedInstallOptions(uuids: UUIDSource { uuid })
        #expect(throws: SeedInstallError.self) {
            try SeedInstaller.install(seed: seed, to: directory.path("app.db"), options: options)
        }
        #expect(try VerifyFixtures.strayFiles(in: directory, keeping: []) == ["seed.db"])
    }

    @Test("a missing destination directory is an I/O failure that leaves nothing behind")
    func missingDirectory() throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-install")
        let seed = try VerifyFixtures.cleanCopy(in: directory)
        #expect {
            _ = try SeedInstaller.install(seed: seed, to: directory.path("absent/app.db"))
        } throws: { error in
            guard case .io = error as? SeedInstallError else { return false }
            return true
        }
        #expect(try VerifyFixtures.strayFiles(in: directory, keeping: []) == ["seed.db"])
    }

    // MARK: - Packed seeds

    @Test("a packed seed verifies and installs after bounded unpacking")
    func packedSeedInstalls() throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-install")
        let seed = try VerifyFixtures.cleanCopy(in: directory)
        let packed = directory.path("seed.db.zst")
        _ = try SeedPacker.pack(seed, to: packed)
        let report = try SeedVerifier.verify(path: packed)
        #expect(report.ok)
        _ = try SeedInstaller.install(seed: packed, to: directory.path("app.db"))
        #expect(try VerifyFixtures.strayFiles(in: directory, keeping: []) == ["app.db", "seed.db", "seed.db.zst"])
    }

    @Test("a packed seed with a flipped byte is unusable input and installs nothing")
    func damagedPackIsUnusable() throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-install")
        let seed = try VerifyFixtures.cleanCopy(in: directory)
        let packed = directory.path("seed.db.zst")
        _ = try SeedPacker.pack(seed, to: packed)
        var bytes = Array(try Data(contentsOf: URL(fileURLWithPath: packed)))
        bytes[bytes.count / 2] ^= 0x40
        try Data(bytes).write(to: URL(fileURLWithPath: packed))
        #expect {
            _ = try SeedVerifier.verify(path: packed)
        } throws: { error in
            guard case .unpackFailed = error as? SeedInputError else { return false }
            return true
        }
        #expect {
            _ = try SeedInstaller.install(seed: packed, to: directory.path("app.db"))
        } throws: { error in
            guard case .unusableSeed(.unpackFailed) = error as? SeedInstallError else { return false }
            return true
        }
        #expect(try VerifyFixtures.strayFiles(in: directory, keeping: []) == ["seed.db", "seed.db.zst"])
    }

    @Test("a packed seed over the unpack limit is refused before anything is written")
    func oversizePackIsRefused() throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-install")
        let seed = try VerifyFixtures.cleanCopy(in: directory)
        let packed = directory.path("seed.db.zst")
        _ = try SeedPacker.pack(seed, to: packed)
        #expect {
            _ = try SeedVerifier.verify(path: packed, options: SeedVerificationOptions(maximumUnpackedBytes: 4096))
        } throws: { error in
            guard case .unpackFailed = error as? SeedInputError else { return false }
            return true
        }
        let options = SeedInstallOptions(maximumUnpackedBytes: 4096)
        #expect(throws: SeedInstallError.self) {
            try SeedInstaller.install(seed: packed, to: directory.path("app.db"), options: options)
        }
        #expect(try VerifyFixtures.strayFiles(in: directory, keeping: []) == ["seed.db", "seed.db.zst"])
    }

    // MARK: - Proving the copy's rows equal the seed's

    @Test("a table whose pages the migration did not touch is proven equal to the seed's by its pages")
    func untouchedTablesAreProvenByPages() throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-install")
        let seed = try VerifyFixtures.cleanCopy(in: directory)
        let staged = try VerifyFixtures.migratedCopy(of: seed, named: ".app.db.seed-pages", in: directory)

        func proven(_ table: String) throws -> Bool {
            try VerifyFixtures.pageIdentity(copy: staged, seed: seed) { $0.proves(table: table, on: $1) }
        }
        #expect(try proven("products"))
        #expect(try proven("_synchro_row_versions"))
        #expect(try proven("_synchro_scope_rows"), "v13 keeps a seed's edge table, which already has its shape")
        #expect(try !proven("_synchro_scopes"), "v13 rebuilds the scope table")
        #expect(try !proven("no_such_table"))

        try VerifyFixtures.modify(
            staged, "UPDATE products SET title = title || '!' WHERE id = (SELECT max(id) FROM products)")
        SeedStaging.removeSidecars(of: staged)
        #expect(try !proven("products"), "one changed leaf page")
        #expect(try proven("_synchro_row_versions"))
    }

    @Test("a seed of another page size (upstream writes 4 KiB) verifies, installs keeping it and is proven by pages",
          arguments: [1_024, 4_096, 65_536])
    func seedsOfEveryPageSizeInstall(pageSize: Int) throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-install")
        let clean = try VerifyFixtures.cleanCopy(in: directory, name: "clean.db")
        let seed = directory.path("seed.db")
        let source = try Connection(path: clean, mode: .readWrite)
        try source.execute("PRAGMA page_size = \(pageSize)")
        try source.run("VACUUM INTO ?", [.text(seed)])
        source.close()
        #expect(try VerifyFixtures.scalar(seed, "PRAGMA page_size")?.integerValue == Int64(pageSize))
        #expect(pageSize != SeedDatabaseWriter.pageSize)

        let report = try SeedVerifier.verify(path: seed)
        #expect(report.findings == [])
        #expect(report.ok)
        #expect(Int64(report.rows) == (try VerifyFixtures.exports.get().rows))
        let destination = directory.path("app.db")
        #expect(try SeedInstaller.install(seed: seed, to: destination).verification.ok)
        #expect(try VerifyFixtures.scalar(destination, "PRAGMA page_size")?.integerValue == Int64(pageSize))

        let staged = try VerifyFixtures.migratedCopy(of: seed, named: ".app.db.seed-pages", in: directory)
        for table in ["products", "_synchro_row_versions", "_synchro_scope_rows"] {
            #expect(try VerifyFixtures.pageIdentity(copy: staged, seed: seed) { $0.proves(table: table, on: $1) })
        }
    }

    @Test("the page walk compares a table's overflow pages too: one changed overflow octet disproves the table")
    func pageWalkComparesOverflowPages() throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-install")
        let seed = try VerifyFixtures.cleanCopy(in: directory)
        // A title of two pages' length spills to an overflow chain of at least two pages.
        let pageSize = try #require(VerifyFixtures.scalar(seed, "PRAGMA page_size")?.integerValue)
        try VerifyFixtures.modify(
            seed, "UPDATE products SET title = hex(zeroblob(\(pageSize))) WHERE id = (SELECT min(id) FROM products)")
        let staged = try VerifyFixtures.migratedCopy(of: seed, named: ".app.db.seed-overflow", in: directory)

        func walk(_ table: String) throws -> SeedPageIdentity.Walk? {
            try VerifyFixtures.walk(table, copy: staged, seed: seed)
        }
        let overflow = try #require(VerifyFixtures.scalar(
            staged, "SELECT max(pageno) FROM dbstat WHERE name = 'products' AND pagetype = 'overflow'")?.integerValue)
        #expect(try walk("products") == .identical)
        #expect(try walk("_synchro_scope_rows") == .identical)
        #expect(try walk("_synchro_scopes") == .different, "v13 rebuilt it on other pages")
        #expect(try VerifyFixtures.pageIdentity(copy: staged, seed: seed) { $0.proves(table: "products", on: $1) })

        // One octet in the middle of the last overflow page, which no leaf page shows.
        try VerifyFixtures.flipOctet(in: staged, at: (overflow - 1) * pageSize + pageSize / 2)
        #expect(try walk("products") == .different)
        #expect(try !VerifyFixtures.pageIdentity(copy: staged, seed: seed) { $0.proves(table: "products", on: $1) })
        #expect(try walk("_synchro_row_versions") == .identical)
    }

    @Test("a product changed in the copy only is found by the installer checks, not hidden by the seed's audit")
    func copyDifferingFromTheSeedIsAuditedOnItsOwn() throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-install")
        let seed = try VerifyFixtures.cleanCopy(in: directory)
        let staged = directory.path(".app.db.seed-differs")
        try SeedStaging.copy(seed, to: staged)
        try VerifyFixtures.modify(
            staged, "UPDATE products SET title = title || '!' WHERE id = (SELECT max(id) FROM products)")
        try VerifyFixtures.migrateAsInstaller(staged)

        let shared = PublicationHandoff()
        var publication = PublicationVerifier(path: seed, options: SeedVerificationOptions(), shared: shared)
        publication.run()
        #expect(publication.collector.finish().findings == [])
        let collector = FindingCollector(limit: 20)
        InstalledSeedValidator(path: staged, collector: collector, seed: (seed, shared)).run()
        let findings = collector.finish().findings
        #expect(findings.contains { $0.check == .installerScopeDigest && $0.table == "products" })
    }

    @Test("capture trigger texts compare by their words, whatever the whitespace")
    func triggerTextsCompareByWords() {
        let equal = [
            ("CREATE TRIGGER t AFTER INSERT ON p BEGIN SELECT 1; END",
             "CREATE  TRIGGER t\n\tAFTER INSERT ON p\r\nBEGIN\n  SELECT 1;\nEND\n"),
            ("  a b ", "a b"),
            ("", " \n "),
            ("SELECT 'ü'  FROM t", "SELECT 'ü' FROM t"),
            ("a\u{00A0}b", "a b"),
        ]
        for (a, b) in equal {
            #expect(InstalledSeedValidator.equalCollapsed(a, b), "\(a.debugDescription) \(b.debugDescription)")
            #expect(InstalledSeedValidator.collapsed(a) == InstalledSeedValidator.collapsed(b))
        }
        let different = [("a b", "a bc"), ("a b", "ab"), ("a b c", "a b"), ("SELECT 1", "SELECT 2"), ("x", "")]
        for (a, b) in different {
            #expect(!InstalledSeedValidator.equalCollapsed(a, b), "\(a.debugDescription) \(b.debugDescription)")
            #expect(!InstalledSeedValidator.equalCollapsed(b, a))
        }
    }
}

extension VerifyFixtures {
    /// Opens the staged copy `staged` of a seed with the client store, which migrates it as the installer does,
    /// closes it and removes its sidecars.
    /// `seed` copied to `name` in `directory` and migrated as the installer does; returns the copy's path.
    static func migratedCopy(of seed: String, named name: String, in directory: TemporaryDirectory) throws -> String {
        let staged = directory.path(name)
        try SeedStaging.copy(seed, to: staged)
        try migrateAsInstaller(staged)
        return staged
    }

    static func migrateAsInstaller(_ staged: String) throws {
        let store = try ClientStore(configuration: ClientStoreConfiguration(path: staged, clientID: "seedkit-test"))
        store.close()
        SeedStaging.removeSidecars(of: staged)
    }

    /// Whether `proof` holds for the page identity of `copy` and `seed`, on a read-only connection to `copy` with
    /// `seed` attached as `seed` (false when the identity cannot be set up).
    static func pageIdentity(
        copy: String, seed: String, _ proof: (SeedPageIdentity, Connection) -> Bool
    ) throws -> Bool {
        let connection = try Connection(path: copy, mode: .readOnly)
        defer { connection.close() }
        try connection.run("ATTACH DATABASE ? AS seed", [.text(SeedFileProbe.immutableURI(seed))])
        guard let identity = SeedPageIdentity(copy: copy, seed: seed) else { return false }
        return proof(identity, connection)
    }
}
