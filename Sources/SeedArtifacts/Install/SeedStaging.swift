import Foundation
import Glibc
import SynchroClient

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

    /// Runs steps 1–3 on `seed` staged at `staged`; findings go to `collector`. Throws only when a file operation
    /// fails (the seed itself is then not to blame).
    ///
    /// `shared` carries the publication checks' row audit of `seed`, which the validation reuses when the migrated
    /// copy holds the same rows.
    static func stage(
        seed: String, at staged: String, collector: FindingCollector, shared: SharedRowAudit? = nil
    ) throws(IOFailure) {
        try copy(seed, to: staged)
        CrashPoint.reached("install.copied")
        guard migrate(staged, collector: collector) else { return }
        CrashPoint.reached("install.migrated")
        removeSidecars(of: staged)
        InstalledSeedValidator(path: staged, collector: collector, seed: shared.map { (seed, $0) }).run()
        removeSidecars(of: staged)
    }

    /// Opens the copy with the client store, which migrates a baseline seed forward, and closes it (step 2).
    /// False, with an `installer_open` finding, when the client refuses the file.
    private static func migrate(_ path: String, collector: FindingCollector) -> Bool {
        collector.evaluated(.installerOpen)
        do {
            // Opening binds no client ID (that is the first connect's job); the ID only has to be well formed.
            let configuration = ClientStoreConfiguration(path: path, clientID: "seedkit-install")
            let store = try ClientStore(configuration: configuration)
            store.close()
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
        closed = true
        guard close(output) == 0 else { throw IOFailure(operation: "close", path: target, errno: errno) }
    }

    static let sidecarSuffixes = ["-journal", "-wal", "-shm"]

    static func removeSidecars(of path: String) {
        for suffix in sidecarSuffixes { unlink(path + suffix) }
    }

    /// Removes `path` and its sidecars; throws for the first removal that failed for another reason than absence.
    static func removeFamily(_ path: String) throws(IOFailure) {
        var failure: IOFailure?
        for name in [path] + sidecarSuffixes.map({ path + $0 }) where unlink(name) != 0 && errno != ENOENT {
            failure = failure ?? IOFailure(operation: "unlink", path: name, errno: errno)
        }
        if let failure { throw failure }
    }

    static func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }
}
