import Foundation

/// The one-owner rule of a client store (seed 002, "Accounts and cache authority": a database has one physical
/// owner; a competing open fails with `store_in_use`): an exclusive, non-blocking `flock` on `<store>.lock`
/// beside the file, taken before the file is opened or migrated and held until the owner closes it. The holder
/// writes its PID into the lock file so a refused opener can name it. The kernel drops the lock when the owner
/// dies, so a killed process never leaves the store locked; a stale PID in the file is only a diagnostic.
/// Why a lock file and `flock` rather than a lock on the database itself: `docs/decisions.md`, "One owner per
/// store".
package final class StoreOwnerLock: Sendable {
    /// The lock file.
    package let path: String
    private let descriptor: Int32

    /// Takes the lock for the store at `storePath`, failing at once with
    /// ``ClientStoreError/storeInUse(path:holderPID:)`` when another open description holds it.
    package init(storePath: String) throws(ClientStoreError) {
        path = storePath + ".lock"
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw .ownerLockUnavailable(path: path, errno: errno) }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let failure = errno
            let holder = failure == EWOULDBLOCK ? Self.recordedPID(descriptor) : nil
            close(descriptor)
            if failure == EWOULDBLOCK { throw .storeInUse(path: storePath, holderPID: holder) }
            throw .ownerLockUnavailable(path: path, errno: failure)
        }
        self.descriptor = descriptor
        Self.record(getpid(), in: descriptor)
    }

    deinit {
        // The PID is cleared so a later reader never names a process that has let go; closing the descriptor
        // releases the lock and the file stays for the next owner.
        _ = ftruncate(descriptor, 0)
        close(descriptor)
    }

    /// Writes `pid` as decimal text, replacing what the previous owner left. Best effort: the PID is diagnostic.
    private static func record(_ pid: pid_t, in descriptor: Int32) {
        let bytes = Array("\(pid)\n".utf8)
        _ = ftruncate(descriptor, 0)
        _ = bytes.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
    }

    /// The PID the holder wrote, or nil while it has not written one yet (or wrote something else).
    private static func recordedPID(_ descriptor: Int32) -> Int32? {
        var buffer = [UInt8](repeating: 0, count: 32)
        let count = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return nil }
        let text = String(decoding: buffer[..<count], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard let pid = Int32(text), pid > 0 else { return nil }
        return pid
    }
}
