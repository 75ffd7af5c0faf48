import Glibc

/// An exclusive advisory lock on a lock file (`flock`), held for the lifetime of the value: the one mechanism behind
/// "one writer per place" — a client store's owner (`StoreOwnerLock`), a pipeline's publish directory and an
/// export's destination. The holder writes its PID into the file so a refused process can name it. The kernel drops
/// the lock when the holder dies, so a killed process never leaves the place locked; a stale PID in the file is only
/// a diagnostic. Why `flock` on a separate file: `docs/decisions.md`, "One owner per store".
package final class AdvisoryLock: Sendable {
    /// Why the lock was not taken.
    package enum Failure: Error, Sendable, Equatable {
        /// Another open description holds it; `holderPID` is the PID it recorded, when it recorded one.
        case held(path: String, holderPID: Int32?)
        /// The lock file could not be opened or locked.
        case unavailable(SystemError)
    }

    /// The lock file.
    package let path: String
    private let descriptor: Int32

    /// Takes the lock on `path` (created 0600 when missing). With `wait` nil or zero it fails at once when another
    /// process holds it; otherwise it retries every `pollInterval` until `wait` has passed, then fails with
    /// ``Failure/held(path:holderPID:)``. `shouldStop` ends a wait early (an interrupted run) with the same failure.
    package init(
        path: String, wait: Duration? = nil, pollInterval: Duration = .milliseconds(100),
        shouldStop: () -> Bool = { false }
    ) throws(Failure) {
        self.path = path
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw .unavailable(.last("open", path: path)) }
        let deadline = ContinuousClock.now + (wait ?? .zero)
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            let failure = errno
            if failure == EINTR { continue }
            guard failure == EWOULDBLOCK else {
                close(descriptor)
                throw .unavailable(SystemError(operation: "lock", path: path, code: failure))
            }
            guard ContinuousClock.now < deadline, !shouldStop() else {
                let holder = Self.recordedPID(descriptor)
                close(descriptor)
                throw .held(path: path, holderPID: holder)
            }
            // A bounded wait for another process to finish: there is no notification for a released flock.
            let (seconds, attoseconds) = pollInterval.components
            var pause = timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
            _ = nanosleep(&pause, nil)
        }
        self.descriptor = descriptor
        Self.record(getpid(), in: descriptor)
    }

    deinit {
        // The PID is cleared so a later reader never names a process that has let go; closing the descriptor
        // releases the lock and the file stays for the next holder.
        _ = ftruncate(descriptor, 0)
        close(descriptor)
    }

    /// Whether some process holds the lock on `path` now (false when the file is missing). Used to tell a live
    /// run's files from a dead one's.
    package static func isHeld(path: String) -> Bool {
        let descriptor = open(path, O_RDWR | O_CLOEXEC)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else { return errno == EWOULDBLOCK }
        _ = flock(descriptor, LOCK_UN)
        return false
    }

    /// Writes `pid` as decimal text, replacing what the previous holder left. Best effort: the PID is diagnostic.
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
        var value: Int32 = 0
        for byte in buffer[..<count] {
            if byte == 0x0A { break }
            guard (0x30...0x39).contains(byte), value < 100_000_000 else { return nil }
            value = value * 10 + Int32(byte - 0x30)
        }
        return value > 0 ? value : nil
    }
}
