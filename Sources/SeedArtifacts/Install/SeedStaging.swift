import Foundation
import Glibc
import SQLiteKit
import SynchroStore
import SystemKit

/// The device installer's procedure up to publication (`spec/seed-format.md` §7.1 steps 1–3): copy the seed to a
/// temporary name, open it with the full client store (which runs the remaining migrations), close it, delete the
/// sidecars, validate with a plain read connection, delete the sidecars again. ``SeedInstaller`` then publishes
/// the staged file; ``SeedVerifier`` deletes it.
enum SeedStaging {
    /// A file operation that failed (`errno`); names the operation and the path only.
    struct IOFailure: Error, Sendable, Equatable {
        let operation: String
        let path: String
        let errno: Int32
    }

    /// `.<name>.seed-<uuid>` in the directory of `destination` (§7.1 step 1).
    static func stagedPath(nextTo destination: String, uuid: String) -> String {
        let url = URL(fileURLWithPath: destination)
        return url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).seed-\(uuid)").path
    }

    /// Where the procedure runs.
    enum Target: Sendable {
        /// A temporary file (`.<name>.seed-<UUID>`): the copy an install publishes, migrated by the client store with
        /// the settings it uses on a device.
        case file(String)
        /// An in-memory database shared under `name` (SQLite's `memdb` VFS) that a verification migrates and throws
        /// away: the same client migration without writing, journaling to or syncing the disk. When the seed cannot
        /// be copied into memory (larger than `maximumBytes`, a WAL-mode header, a copy that fails), the procedure
        /// runs on a copy-on-write overlay of the seed at the file `fallback` (``CopyOnWriteFile``: only the pages
        /// the migration writes are written), and on a byte copy at `fallback` when SQLite does not interpret URI
        /// filenames.
        case memory(name: String, fallback: String, maximumBytes: Int64 = SeedStaging.maximumInMemoryBytes)
    }

    /// Runs steps 1–3 on `seed` staged at the file `staged`; findings go to `collector`. Throws only when a file
    /// operation fails (the seed itself is then not to blame).
    static func stage(
        seed: String, at staged: String, collector: FindingCollector, shared: PublicationHandoff? = nil
    ) throws(IOFailure) {
        try stage(seed: seed, target: .file(staged), collector: collector, shared: shared)
    }

    /// Runs steps 1–3 on `seed` staged at `target`; findings go to `collector`. Throws only when a file operation
    /// fails (the seed itself is then not to blame).
    ///
    /// `shared` carries the publication checks' row audit of `seed`, which the validation reuses when the migrated
    /// copy holds the same rows.
    static func stage(
        seed: String, target: Target, collector: FindingCollector, shared: PublicationHandoff? = nil
    ) throws(IOFailure) {
        switch target {
        case .file(let staged):
            try stageFile(seed: seed, at: staged, collector: collector, shared: shared)
        case .memory(let name, let fallback, let maximumBytes):
            if !stageInMemory(seed: seed, name: name, maximumBytes: maximumBytes, collector: collector, shared: shared)
            {
                try stageOverlay(seed: seed, at: fallback, collector: collector, shared: shared)
            }
        }
    }

    /// Steps 1–3 on a copy-on-write overlay of `seed` at `staged` (``CopyOnWriteFile``): the client store opens,
    /// migrates and closes the overlay exactly as it would a byte copy at `staged`, and the validation reads it, but
    /// only the blocks the migration writes reach the disk — the seed's other pages are read where they are. Every
    /// read returns what the byte copy would hold at that moment (the overlay's invariant), so the migration and
    /// the validation see the same octets, and record the same findings, as on the copy of ``stageFile``
    /// (docs/decisions.md, "Verify migrates a copy-on-write overlay of a large seed"). Without URI filenames the
    /// client store cannot be pointed at the overlay's VFS: the byte copy is made then.
    private static func stageOverlay(
        seed: String, at staged: String, collector: FindingCollector, shared: PublicationHandoff?
    ) throws(IOFailure) {
        guard Connection.interpretsFileURIsByDefault else {
            return try stageFile(seed: seed, at: staged, collector: collector, shared: shared)
        }
        let overlay: CopyOnWriteFile
        do {
            overlay = try CopyOnWriteFile(base: seed, overlay: staged)
        } catch {
            throw IOFailure(operation: error.operation, path: error.path, errno: error.code)
        }
        // Every connection to the overlay is closed when the validation returns; the VFS goes after them.
        defer { overlay.close() }
        CrashPoint.reached("install.copied")
        guard migrate(overlay.uri, collector: collector) else { return }
        CrashPoint.reached("install.migrated")
        removeSidecars(of: staged)
        InstalledSeedValidator(copy: .overlay(uri: overlay.immutableURI), collector: collector,
                               seed: shared.map { (seed, $0) }).run()
        removeSidecars(of: staged)
    }

    private static func stageFile(
        seed: String, at staged: String, collector: FindingCollector, shared: PublicationHandoff?
    ) throws(IOFailure) {
        try copy(seed, to: staged)
        CrashPoint.reached("install.copied")
        guard migrate(staged, collector: collector) else { return }
        CrashPoint.reached("install.migrated")
        removeSidecars(of: staged)
        InstalledSeedValidator(copy: .file(staged), collector: collector, seed: shared.map { (seed, $0) }).run()
        removeSidecars(of: staged)
    }

    /// The largest seed copied into memory: a verification of a larger one stages a file, so that its memory stays
    /// bounded (the migrated copy is somewhat larger than the seed). 96 MiB (was 256): the copy is the largest part
    /// of verify's peak, and with 256 a seed just under it would have peaked near 300 MB, over the 200 MB goal
    /// (issue #21); the 100,000-row demo seed (56 MB) still stays in memory.
    static let maximumInMemoryBytes: Int64 = 96 << 20

    /// Steps 1–3 on an in-memory copy taken with the backup API (the seed's pages, page for page, as a file copy
    /// has them). False, having recorded nothing, when the copy cannot be made; the caller then stages a file.
    private static func stageInMemory(
        seed: String, name: String, maximumBytes: Int64, collector: FindingCollector, shared: PublicationHandoff?
    ) -> Bool {
        var info = stat()
        guard Connection.interpretsFileURIsByDefault, stat(seed, &info) == 0,
              Int64(info.st_size) <= maximumBytes
        else { return false }
        let uri = Connection.memoryDatabaseURI(named: name)
        // The holder keeps the in-memory database alive while the client store and the validation open and close
        // their own connections to it.
        let holder: Connection
        do {
            holder = try Connection(path: uri, mode: .readWriteCreate, uri: true)
        } catch {
            return false
        }
        defer { holder.close() }
        do {
            let source = try SeedFileProbe.openImmutable(seed, meter: collector.meter)
            defer { source.close() }
            // The backup reads each page once: a page cache on either side would only be allocated and filled.
            try source.execute("PRAGMA cache_size = 16")
            try holder.execute("PRAGMA cache_size = 16")
            try source.backup(to: holder)
            // A WAL-mode header cannot be opened in memory, which has no shared-memory index: reading the schema
            // fails then.
            _ = try holder.scalar("SELECT count(*) FROM sqlite_schema")
        } catch {
            return false
        }
        guard migrate(uri, collector: collector) else { return true }
        InstalledSeedValidator(copy: .memory(uri: uri), collector: collector, seed: shared.map { (seed, $0) }).run()
        return true
    }

    /// Opens the copy as the client store does, which migrates a baseline seed forward, and closes it (step 2).
    /// False, with an `installer_open` finding, when the client refuses the file.
    private static func migrate(_ path: String, collector: FindingCollector) -> Bool {
        collector.evaluated(.installerOpen)
        do {
            // The seed passed the schema gate (``SeedSchemaGate``): its only triggers are the generator's capture
            // triggers, which keep firing as on a device; views and untrusted functions stay off, and the
            // migration counts against the verification's budget.
            _ = try StoreFile.migrate(path: path) { connection throws(SQLiteError) in
                try collector.meter.guardConnection(connection, triggers: true)
            }
            return true
        } catch {
            collector.add(.installerOpen, "the client store cannot open and migrate the seed: \(error.rule): \(error)")
            return false
        }
    }

    // MARK: - Files

    /// Copies `source` to a new file `target` (never an existing one). Not synced: the copy is a scratch file under a
    /// temporary name until ``SeedInstaller`` syncs it right before linking it into place, and a verification
    /// deletes it; syncing it here would only wait for the disk twice.
    static func copy(_ source: String, to target: String) throws(IOFailure) {
        let input = open(source, O_RDONLY | O_CLOEXEC)
        guard input >= 0 else { throw IOFailure(operation: "open", path: source, errno: errno) }
        defer { close(input) }
        let output = open(target, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard output >= 0 else { throw IOFailure(operation: "create", path: target, errno: errno) }
        var closed = false
        defer { if !closed { close(output) } }
        try sendFile(input, to: output, source: source, target: target)
        closed = true
        guard close(output) == 0 else { throw IOFailure(operation: "close", path: target, errno: errno) }
    }

    /// Copies `input` to `output` inside the kernel (`sendfile`: no pass through a user buffer), or through a buffer
    /// when the file systems do not support that.
    private static func sendFile(_ input: Int32, to output: Int32, source: String, target: String) throws(IOFailure) {
        var info = stat()
        guard fstat(input, &info) == 0 else { throw IOFailure(operation: "stat", path: source, errno: errno) }
        var remaining = Int(info.st_size)
        while remaining > 0 {
            let count = sendfile(output, input, nil, remaining)
            if count < 0 {
                if errno == EINTR { continue }
                if (errno == EINVAL || errno == ENOSYS) && remaining == Int(info.st_size) {
                    return try bufferedCopy(input, to: output, source: source, target: target)
                }
                throw IOFailure(operation: "sendfile", path: target, errno: errno)
            }
            // The source shrank while it was copied: what was read is the copy, as with a buffered copy.
            if count == 0 { break }
            remaining -= count
        }
    }

    private static func bufferedCopy(_ input: Int32, to output: Int32, source: String, target: String)
        throws(IOFailure)
    {
        let size = 1 << 20
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let count = read(input, buffer, size)
            if count < 0 {
                if errno == EINTR { continue }
                throw IOFailure(operation: "read", path: source, errno: errno)
            }
            if count == 0 { break }
            var written = 0
            while written < count {
                let result = write(output, buffer + written, count - written)
                if result < 0 {
                    if errno == EINTR { continue }
                    throw IOFailure(operation: "write", path: target, errno: errno)
                }
                written += result
            }
        }
    }

    static let sidecarSuffixes = ["-journal", "-wal", "-shm"]

    static func removeSidecars(of path: String) {
        for suffix in sidecarSuffixes { unlink(path + suffix) }
    }

    /// Removes `path` and its sidecars; throws for the first removal that failed for another reason than absence.
    static func removeFamily(_ path: String) throws(IOFailure) {
        do {
            try FileSystem.removeFamily(path, suffixes: sidecarSuffixes)
        } catch {
            throw IOFailure(operation: "unlink", path: error.path, errno: error.code)
        }
    }
}

/// The migrated copy the installer's validation reads, on connections of its own.
enum StagedCopy: Sendable {
    /// A file, opened read-only and `immutable=1`.
    case file(String)
    /// An in-memory database (``SeedStaging/Target/memory(name:fallback:maximumBytes:)``), opened read-only by its
    /// URI.
    case memory(uri: String)
    /// A copy-on-write overlay of the seed (``CopyOnWriteFile``), opened by its `immutable=1` URI.
    case overlay(uri: String)

    /// Whether the copy is opened through a VFS of its own, which a database attached to its connection inherits.
    var hasOwnVFS: Bool {
        if case .file = self { return false }
        return true
    }

    /// A read connection guarded by `meter` (``BudgetMeter/guardConnection(_:triggers:)``).
    func openReadOnly(meter: BudgetMeter) throws(SQLiteError) -> Connection {
        switch self {
        case .file(let path):
            return try SeedFileProbe.openImmutable(path, meter: meter)
        case .memory(let uri):
            let connection = try Connection(path: uri, mode: .readOnly, uri: true)
            try meter.guardConnection(connection)
            try connection.execute("PRAGMA cache_size = -16384")
            return connection
        case .overlay(let uri):
            // The settings of a file copy (``SeedFileProbe/openImmutable(_:meter:)``): its pages are read from the
            // disk, so the cache stays as small.
            let connection = try Connection(path: uri, mode: .readOnly, uri: true)
            try meter.guardConnection(connection)
            try connection.execute("PRAGMA mmap_size = 0; PRAGMA cache_size = -2048")
            return connection
        }
    }
}
