import Foundation
import Glibc
import SQLiteKit
@testable import SynchroServer
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// The first load of a SQLite store is a bulk load into a file of its own (``InitialStoreFile``): the store it
/// publishes holds exactly what the load in the store's own transaction writes (a `file:` URI keeps that path), a
/// partial file of a killed load is discarded by the next start, and a second loader is refused without a trace.
@Suite("Bulk load of a new SQLite store", .serialized)
struct BulkLoadTests {
    static let rows = 4321
    static let queries = [
        "SELECT identity, table_id, pk, row, server_version, state FROM source_rows ORDER BY identity",
        "SELECT identity, table_id, pk, row, server_version, row_digest, state FROM projection ORDER BY identity",
        "SELECT scope_id, identity, row_digest FROM membership ORDER BY scope_id, identity",
        "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name",
        "SELECT key, value FROM server_meta WHERE key NOT LIKE 'key:%' AND key <> 'created_us' ORDER BY key",
        "SELECT version, hash, manifest, transition_class, affected_scopes FROM manifests ORDER BY version",
    ]

    static func exists(_ path: String) -> Bool { FileManager.default.fileExists(atPath: path) }

    static func dataset() throws -> Dataset {
        try Dataset(directory: RepositoryLayout.root.appendingPathComponent("seeds/demo"))
    }

    @Test("the bulk-loaded store equals, row for row, the store loaded in its own transaction")
    func bulkEqualsTransactionalLoad() throws {
        let dataset = try Self.dataset()
        let directory = try TemporaryDirectory(prefix: "seedkit-bulk-load")
        let bulkPath = directory.path("bulk.db")
        let bulk = try ServerStore(path: bulkPath, dataset: dataset, rowsOverride: Self.rows, clock: ManualServerClock())
        // An in-memory store is never bulk-built: the reference load, in the store's own transaction.
        let reference = try ServerStore(
            path: ":memory:", dataset: dataset, rowsOverride: Self.rows, clock: ManualServerClock())
        for query in Self.queries {
            let expected = try reference.db.cachedStatement(query).rows()
            let loaded = try bulk.db.cachedStatement(query).rows()
            #expect(!expected.isEmpty, "\(query)")
            #expect(loaded.count == expected.count, "\(query): \(loaded.count) rows bulk, \(expected.count) reference")
            let same = loaded == expected
            #expect(same, "\(query): the stores differ")
        }
        #expect(try bulk.db.cachedStatement("SELECT count(*) FROM projection").scalar()?.integerValue ?? 0
            >= Int64(Self.rows))
        #expect(try bulk.db.cachedStatement("PRAGMA journal_mode").scalar()?.textValue == "wal")
        #expect(try bulk.db.cachedStatement("PRAGMA user_version").scalar()?.integerValue
            == Int64(ServerSchema.version))
        #expect(try bulk.db.cachedStatement("PRAGMA integrity_check").scalar()?.textValue == "ok")
        // Keys are the store's own, and present.
        for purpose in ServerKeyPurpose.allCases { #expect(try bulk.key(purpose.rawValue).count == 32) }
        #expect(!Self.exists(InitialStoreFile.loadingPath(bulkPath)))
        #expect(!Self.exists(InitialStoreFile.lockPath(bulkPath)))
        var status = stat()
        #expect(stat(bulkPath, &status) == 0 && status.st_mode & 0o777 == 0o600)
    }

    @Test("a partial file and lock left by a killed load are discarded; an empty file is replaced")
    func killedLoadIsResolvedByTheNextStart() throws {
        let dataset = try Self.dataset()
        let directory = try TemporaryDirectory(prefix: "seedkit-bulk-load")
        let path = directory.path("server.db")
        // What a SIGKILL during the load leaves: the partial file (here garbage), the lock file with a dead PID, and
        // an empty destination from an older release that created it first.
        try Array("not a database, a killed load's partial pages".utf8).write(to: InitialStoreFile.loadingPath(path))
        try Array("999999".utf8).write(to: InitialStoreFile.lockPath(path))
        #expect(FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600]))
        let store = try ServerStore(path: path, dataset: dataset, rowsOverride: 50, clock: ManualServerClock())
        #expect(try store.db.cachedStatement("SELECT count(*) FROM source_rows").scalar()?.integerValue ?? 0 >= 50)
        #expect(!Self.exists(InitialStoreFile.loadingPath(path)))
        #expect(!Self.exists(InitialStoreFile.lockPath(path)))
    }

    @Test("a second process loading the same new store is refused and nothing is created")
    func concurrentLoaderIsRefused() throws {
        let dataset = try Self.dataset()
        let directory = try TemporaryDirectory(prefix: "seedkit-bulk-load")
        let path = directory.path("server.db")
        // Another process's lock: `flock` on its own open file description conflicts with this process's too.
        let other = open(InitialStoreFile.lockPath(path), O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        #expect(other >= 0 && flock(other, LOCK_EX | LOCK_NB) == 0)
        #expect {
            _ = try ServerStore(path: path, dataset: dataset, rowsOverride: 50, clock: ManualServerClock())
        } throws: { error in
            guard case ServerStoreError.loadInProgress = error else { return false }
            return true
        }
        #expect(!Self.exists(path))
        #expect(!Self.exists(InitialStoreFile.loadingPath(path)))
        // Once the other process is gone, the store loads.
        close(other)
        let store = try ServerStore(path: path, dataset: dataset, rowsOverride: 50, clock: ManualServerClock())
        #expect(try store.metaInteger("version_counter") > 0)
    }

    @Test("a store that exists is opened, never loaded again")
    func existingStoreIsKept() throws {
        let dataset = try Self.dataset()
        let directory = try TemporaryDirectory(prefix: "seedkit-bulk-load")
        let path = directory.path("server.db")
        let first = try ServerStore(path: path, dataset: dataset, rowsOverride: 50, clock: ManualServerClock())
        let version = try first.nextServerVersion()
        let again = try ServerStore(path: path, dataset: dataset, rowsOverride: 80, clock: ManualServerClock())
        #expect(try again.metaInteger("version_counter") == Int64(version.dropFirst()) ?? -1)
        #expect(!Self.exists(InitialStoreFile.loadingPath(path)))
    }
}

private extension Array where Element == UInt8 {
    func write(to path: String) throws {
        try Data(self).write(to: URL(fileURLWithPath: path))
    }
}
