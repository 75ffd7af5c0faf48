import Foundation
import Glibc
import SeedArtifacts

/// How `seedkit export` publishes its two files so that a seed at the output path always has its evidence: the
/// exporter writes and verifies the seed under a hidden staged name beside the output; the evidence is then
/// written to a temporary file, synced, renamed into place and the directory synced; only then is the staged
/// seed linked (or, with `--force`, renamed) to the output and the directory synced again. A kill at any point
/// leaves no seed without its evidence; with `--force` it can leave the new evidence beside the previous seed,
/// which the evidence's SHA-256 tells apart.
struct ExportPublication {
    let output: String
    let evidence: String
    let overwrite: Bool
    private let directory: String
    private let name: String

    /// Checks the destination before any work: a usable path, no SQLite sidecar beside it, and no existing file
    /// unless replacing it.
    init(output: String, overwrite: Bool) throws(SeedExportError) {
        guard !output.isEmpty, !output.hasSuffix("/") else { throw .output(rule: "invalid_output_path", path: output) }
        let url = URL(fileURLWithPath: output)
        self.output = output
        self.overwrite = overwrite
        evidence = output + ".evidence.json"
        directory = url.deletingLastPathComponent().path
        name = url.lastPathComponent
        try checkDestination()
    }

    /// A new hidden name beside the output for the exporter to publish the verified seed to.
    func stagedPath() -> String {
        hiddenPath(".staged-")
    }

    /// Writes `bytes` as the evidence, durably: temporary file, fsync, rename over any earlier evidence, fsync of
    /// the directory. Never Foundation's atomic write, which leaves a directory behind in the temporary folder.
    func publishEvidence(_ bytes: [UInt8]) throws(SeedExportError) {
        let temporary = hiddenPath(".evidence.partial-")
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw .io(operation: "create", path: temporary, errno: errno) }
        do throws(SeedExportError) {
            try Self.writeAll(bytes, to: descriptor, path: temporary)
            guard fsync(descriptor) == 0 else { throw .io(operation: "fsync", path: temporary, errno: errno) }
            guard close(descriptor) == 0 else { throw .io(operation: "close", path: temporary, errno: errno) }
        } catch {
            close(descriptor)
            unlink(temporary)
            throw error
        }
        guard rename(temporary, evidence) == 0 else {
            let code = errno
            unlink(temporary)
            throw .io(operation: "rename", path: evidence, errno: code)
        }
        try syncDirectory()
    }

    /// Makes the staged seed the output, durably: `link()` when the output must not exist (fails if it appeared
    /// meanwhile), `rename()` to replace it; then fsync of the directory.
    func publishSeed(_ staged: String) throws(SeedExportError) {
        try checkDestination()
        if overwrite {
            guard rename(staged, output) == 0 else { throw .io(operation: "rename", path: output, errno: errno) }
        } else {
            guard link(staged, output) == 0 else {
                let code = errno
                if code == EEXIST { throw .output(rule: "output_exists", path: output) }
                throw .io(operation: "link", path: output, errno: code)
            }
            unlink(staged)
        }
        try syncDirectory()
    }

    /// Removes a staged seed and its SQLite sidecars; missing files are fine.
    static func discard(_ staged: String) {
        for suffix in ["", "-journal", "-wal", "-shm"] { unlink(staged + suffix) }
    }

    private func checkDestination() throws(SeedExportError) {
        for suffix in ["-wal", "-shm", "-journal"] where Self.exists(output + suffix) {
            throw .output(rule: "sidecar_present", path: output + suffix)
        }
        if !overwrite && Self.exists(output) { throw .output(rule: "output_exists", path: output) }
    }

    private func hiddenPath(_ infix: String) -> String {
        var random = SystemRandomNumberGenerator()
        let hidden = "." + name + infix + String(random.next() as UInt64, radix: 16)
        return URL(fileURLWithPath: directory).appendingPathComponent(hidden).path
    }

    private func syncDirectory() throws(SeedExportError) {
        let descriptor = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { throw .io(operation: "open", path: directory, errno: errno) }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else { throw .io(operation: "fsync", path: directory, errno: errno) }
    }

    private static func writeAll(_ bytes: [UInt8], to descriptor: Int32, path: String) throws(SeedExportError) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            if written < 0 {
                if errno == EINTR { continue }
                throw .io(operation: "write", path: path, errno: errno)
            }
            offset += written
        }
    }

    private static func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }
}
