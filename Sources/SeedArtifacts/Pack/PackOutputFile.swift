#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An output written into a hidden temporary file beside its destination (`.<name>.partial-<random>`)
/// and published only when complete: fsync, then `link(2)` (refusing an existing destination
/// atomically) or `rename(2)` (replacing it atomically), then fsync of the directory.
///
/// Until ``publish()`` succeeds the destination is untouched; ``discard()`` (and release without
/// publishing) removes the temporary file, so an error never leaves a partial file behind. A crash
/// can leave the hidden temporary file, never a partial destination.
final class PackOutputFile {
    let destination: String
    let temporaryPath: String
    private let directory: String
    private let overwrite: Bool
    private var descriptor: Int32
    private var finished = false

    init(destination: String, overwrite: Bool) throws(PackError) {
        if !overwrite, Self.exists(destination) { throw .outputExists(path: destination) }
        let (directory, name) = Self.split(destination)
        var attempt = 0
        while true {
            let suffix = UInt64.random(in: 0...UInt64.max)
            let prefix = directory == "." ? "" : directory.hasSuffix("/") ? directory : directory + "/"
            let candidate = prefix + ".\(name).partial-" + Self.hex(suffix)
            let descriptor = open(candidate, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
            if descriptor >= 0 {
                self.descriptor = descriptor
                temporaryPath = candidate
                break
            }
            let code = errno
            attempt += 1
            guard code == EEXIST, attempt < 16 else {
                throw .io(operation: "create a temporary file for", path: destination, errno: code)
            }
        }
        self.destination = destination
        self.directory = directory
        self.overwrite = overwrite
    }

    deinit {
        discard()
    }

    /// Appends all of `bytes`.
    func write(_ bytes: UnsafeRawBufferPointer) throws(PackError) {
        guard var base = bytes.baseAddress else { return }
        var remaining = bytes.count
        while remaining > 0 {
            let written = systemWrite(descriptor, base, remaining)
            if written < 0 {
                if errno == EINTR { continue }
                throw .io(operation: "write", path: temporaryPath, errno: errno)
            }
            base += written
            remaining -= written
        }
    }

    /// Makes the content durable and puts it at the destination in one step.
    func publish() throws(PackError) {
        guard fsync(descriptor) == 0 else { throw .io(operation: "fsync", path: temporaryPath, errno: errno) }
        let closed = close(descriptor)
        descriptor = -1
        guard closed == 0 else { throw .io(operation: "close", path: temporaryPath, errno: errno) }
        if overwrite {
            guard rename(temporaryPath, destination) == 0 else {
                throw .io(operation: "rename into", path: destination, errno: errno)
            }
        } else {
            try linkWithoutReplacing()
            unlink(temporaryPath)
        }
        finished = true
        syncDirectory()
    }

    /// Removes the temporary file; the destination is never touched.
    func discard() {
        guard !finished else { return }
        finished = true
        if descriptor >= 0 { close(descriptor) }
        descriptor = -1
        unlink(temporaryPath)
    }

    /// `link(2)` fails with `EEXIST` when the destination appeared meanwhile: no window for a race.
    /// File systems without hard links fall back to a check and `rename(2)`.
    private func linkWithoutReplacing() throws(PackError) {
        if link(temporaryPath, destination) == 0 { return }
        let code = errno
        switch code {
        case EEXIST:
            throw .outputExists(path: destination)
        case EPERM, ENOTSUP, EOPNOTSUPP, EMLINK:
            if Self.exists(destination) { throw .outputExists(path: destination) }
            guard rename(temporaryPath, destination) == 0 else {
                throw .io(operation: "rename into", path: destination, errno: errno)
            }
        default:
            throw .io(operation: "link", path: destination, errno: code)
        }
    }

    /// The new directory entry survives a crash once the directory itself is synced; best effort,
    /// since the content is already published and durable.
    private func syncDirectory() {
        let handle = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard handle >= 0 else { return }
        _ = fsync(handle)
        close(handle)
    }

    static func exists(_ path: String) -> Bool {
        var status = stat()
        return lstat(path, &status) == 0
    }

    /// The directory (`.` when none is named) and the last component of `path`.
    private static func split(_ path: String) -> (directory: String, name: String) {
        guard let slash = path.lastIndex(of: "/") else { return (".", path) }
        let directory = String(path[..<slash])
        return (directory.isEmpty ? "/" : directory, String(path[path.index(after: slash)...]))
    }

    private static func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}

/// `write(2)`, named apart from ``PackOutputFile/write(_:)``.
private func systemWrite(_ descriptor: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
    write(descriptor, buffer, count)
}
