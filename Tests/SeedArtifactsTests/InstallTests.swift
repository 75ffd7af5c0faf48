import Foundation
import SQLiteKit
@testable import SeedArtifacts
import SynchroClient
import SynchroProtocol
import Testing
import _SeedkitTestSupport

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
}
