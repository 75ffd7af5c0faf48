import Glibc

/// A file published for others to read, written under a hidden temporary name beside its destination
/// (`.<name>.partial-<16 hex digits>`, created with `O_EXCL`) and put in place only when complete.
///
/// ``publish()`` is the one durable publication of the package: `fsync` of the file, then `link(2)` when an existing
/// destination must be refused (it fails with `EEXIST` if one appeared meanwhile, so there is no window for a race)
/// or `rename(2)` when it is replaced (atomically), then `fsync` of the directory. Until it succeeds the destination
/// is untouched; ``discard()``, and releasing the file without publishing, removes the temporary file and its
/// companions, so an error never leaves a partial file behind. A crash can leave the hidden temporary file, never a
/// partial destination.
///
/// The content is written through ``write(_:)``, or by another writer that opens the temporary path itself
/// (SQLite: see ``handOver()``), or it was already there (``init(adopting:destination:replacing:companions:)``).
package final class DurableFile {
    /// Where the file is published.
    package let destination: String
    /// The hidden temporary file beside the destination.
    package let temporaryPath: String
    private let directory: String
    private let replacing: Bool
    private let companions: [String]
    private var descriptor: Int32
    private var synced = false
    private var finished = false

    /// Creates an empty temporary file for `destination`, readable as `permissions` (less the umask) gives.
    ///
    /// - Parameters:
    ///   - replacing: whether ``publish()`` replaces an existing destination; otherwise an existing destination is
    ///     refused now and, atomically, again at publication (a ``SystemError`` with `EEXIST`).
    ///   - companions: suffixes of files that belong to the temporary file and go with it (a database's `-journal`):
    ///     `temporaryPath + suffix` is removed with it, and after publication.
    package init(
        destination: String, replacing: Bool, companions: [String] = [], permissions: mode_t = 0o644
    ) throws(SystemError) {
        if !replacing, FileSystem.exists(destination) {
            throw SystemError(operation: "create", path: destination, code: EEXIST)
        }
        let (directory, name) = FileSystem.split(destination)
        let prefix = directory == "." ? "" : directory.hasSuffix("/") ? directory : directory + "/"
        var attempt = 0
        while true {
            let candidate = prefix + ".\(name).partial-" + Self.hex(UInt64.random(in: 0...UInt64.max))
            let descriptor = open(candidate, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, permissions)
            if descriptor >= 0 {
                self.descriptor = descriptor
                temporaryPath = candidate
                break
            }
            let code = errno
            attempt += 1
            guard code == EEXIST, attempt < 16 else {
                throw SystemError(operation: "create a temporary file for", path: destination, code: code)
            }
        }
        self.destination = destination
        self.directory = directory
        self.replacing = replacing
        self.companions = companions
    }

    /// Takes over `temporary`, a finished file someone else created in the destination's directory (the installer's
    /// `.<name>.seed-<UUID>`), to publish or discard it like a file of its own.
    package init(adopting temporary: String, destination: String, replacing: Bool, companions: [String] = []) {
        self.destination = destination
        temporaryPath = temporary
        directory = FileSystem.split(destination).directory
        self.replacing = replacing
        self.companions = companions
        descriptor = -1
    }

    deinit {
        discard()
    }

    /// Appends all of `bytes`.
    package func write(_ bytes: UnsafeRawBufferPointer) throws(SystemError) {
        guard var base = bytes.baseAddress else { return }
        guard descriptor >= 0 else { throw SystemError(operation: "write", path: temporaryPath, code: EBADF) }
        synced = false
        var remaining = bytes.count
        while remaining > 0 {
            let written = Glibc.write(descriptor, base, remaining)
            if written < 0 {
                if errno == EINTR { continue }
                throw .last("write", path: temporaryPath)
            }
            base += written
            remaining -= written
        }
    }

    /// Appends all of `bytes`.
    package func write(_ bytes: [UInt8]) throws(SystemError) {
        // `withUnsafeBytes` rethrows untyped errors: the typed error travels in a `Result`.
        let written = bytes.withUnsafeBytes { raw in
            Result { () throws(SystemError) in try write(raw) }
        }
        try written.get()
    }

    /// Closes this file's own descriptor and returns the temporary path, for a writer that opens the file itself.
    ///
    /// SQLite must not share a file with a descriptor of ours: closing any descriptor of a file drops every POSIX
    /// lock the process holds on it, SQLite's included. Call ``sync()`` once that writer has closed the file.
    package func handOver() throws(SystemError) -> String {
        try closeDescriptor()
        synced = false
        return temporaryPath
    }

    /// Makes the content written so far durable under the temporary name (`fsync`); ``publish()`` then only places
    /// it. Nothing visible changes.
    package func sync() throws(SystemError) {
        if descriptor >= 0 {
            guard fsync(descriptor) == 0 else { throw .last("fsync", path: temporaryPath) }
        } else {
            try FileSystem.sync(temporaryPath)
        }
        synced = true
    }

    /// Makes the content durable and puts it at the destination in one step, then makes the new directory entry
    /// durable. Throws, leaving the destination untouched, when any step before the placement fails; a `link`
    /// refused because the destination exists is a ``SystemError`` with `EEXIST`.
    package func publish() throws(SystemError) {
        precondition(!finished, "a durable file is published or discarded once")
        if !synced { try sync() }
        try closeDescriptor()
        if replacing {
            try FileSystem.rename(temporaryPath, to: destination)
        } else {
            try linkWithoutReplacing()
            unlink(temporaryPath)
        }
        finished = true
        removeCompanions()
        syncDirectory()
    }

    /// Removes the temporary file and its companions; the destination is never touched. Does nothing once
    /// published.
    package func discard() {
        guard !finished else { return }
        finished = true
        if descriptor >= 0 { close(descriptor) }
        descriptor = -1
        unlink(temporaryPath)
        removeCompanions()
    }

    private func closeDescriptor() throws(SystemError) {
        guard descriptor >= 0 else { return }
        let closed = close(descriptor)
        descriptor = -1
        guard closed == 0 else { throw .last("close", path: temporaryPath) }
    }

    /// `link(2)` fails with `EEXIST` when the destination appeared meanwhile: no window for a race. File systems
    /// without hard links fall back to a check and `rename(2)`.
    private func linkWithoutReplacing() throws(SystemError) {
        if link(temporaryPath, destination) == 0 { return }
        let code = errno
        switch code {
        case EEXIST:
            throw SystemError(operation: "link", path: destination, code: EEXIST)
        case EPERM, ENOTSUP, EOPNOTSUPP, EMLINK:
            if FileSystem.exists(destination) { throw SystemError(operation: "link", path: destination, code: EEXIST) }
            try FileSystem.rename(temporaryPath, to: destination)
        default:
            throw SystemError(operation: "link", path: destination, code: code)
        }
    }

    private func removeCompanions() {
        for suffix in companions { unlink(temporaryPath + suffix) }
    }

    /// The new directory entry survives a crash once the directory itself is synced. Best effort: the content is
    /// already durable and in place, and a publication that cannot be undone is not reported as failed.
    private func syncDirectory() {
        let handle = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard handle >= 0 else { return }
        _ = fsync(handle)
        close(handle)
    }

    private static func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}
