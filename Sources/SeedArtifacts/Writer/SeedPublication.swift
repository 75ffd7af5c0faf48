import Foundation
import Glibc

/// The output side of an artifact (`spec/seed-format.md` §5 steps 2 and 20): checks before any work, a
/// temporary file in the destination directory, and an atomic publish that never leaves a partial file —
/// `link()` when the output must not exist yet (fails if it appeared meanwhile), `rename()` to replace.
struct SeedPublication {
    let output: String
    let overwrite: Bool
    let directory: String

    /// Checks the destination: no sidecar, no existing file unless overwriting; creates the directory.
    init(output: String, overwrite: Bool) throws(SeedExportError) {
        guard !output.isEmpty, !output.hasSuffix("/") else { throw .output(rule: "invalid_output_path", path: output) }
        self.output = output
        self.overwrite = overwrite
        let url = URL(fileURLWithPath: output)
        directory = url.deletingLastPathComponent().path
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw .output(rule: "cannot_create_directory", path: directory)
        }
        try checkDestination()
    }

    private func checkDestination() throws(SeedExportError) {
        for suffix in ["-wal", "-shm", "-journal"] where Self.exists(output + suffix) {
            throw .output(rule: "sidecar_present", path: output + suffix)
        }
        if !overwrite && Self.exists(output) { throw .output(rule: "output_exists", path: output) }
    }

    /// A new, unique temporary name next to the output (same file system, so publishing is a link or rename).
    func temporaryPath() throws(SeedExportError) -> String {
        var random = SystemRandomNumberGenerator()
        let name = "." + URL(fileURLWithPath: output).lastPathComponent + ".partial-"
            + String(random.next() as UInt64, radix: 16)
        return URL(fileURLWithPath: directory).appendingPathComponent(name).path
    }

    /// Makes the finished temporary file the output, durably, or throws leaving the output untouched.
    func publish(_ temporary: String) throws(SeedExportError) {
        try checkDestination()
        try Self.fsync(path: temporary)
        if overwrite {
            guard rename(temporary, output) == 0 else { throw .io(operation: "rename", path: output, errno: errno) }
        } else {
            guard link(temporary, output) == 0 else {
                let code = errno
                if code == EEXIST { throw .output(rule: "output_exists", path: output) }
                throw .io(operation: "link", path: output, errno: code)
            }
            unlink(temporary)
        }
        try Self.fsync(path: directory)
    }

    static func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }

    static func size(of path: String) -> Int64 {
        var info = stat()
        return stat(path, &info) == 0 ? Int64(info.st_size) : 0
    }

    /// Removes a file and its SQLite sidecars; missing files are fine.
    static func remove(family path: String) {
        for suffix in ["", "-journal", "-wal", "-shm"] {
            unlink(path + suffix)
        }
    }

    static func fsync(path: String) throws(SeedExportError) {
        let descriptor = open(path, O_RDONLY)
        guard descriptor >= 0 else { throw .io(operation: "open", path: path, errno: errno) }
        defer { close(descriptor) }
        guard Glibc.fsync(descriptor) == 0 else { throw .io(operation: "fsync", path: path, errno: errno) }
    }
}
