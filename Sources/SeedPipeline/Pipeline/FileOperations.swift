import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The few file-system operations publication needs, with errors as ``PipelineError/io(operation:path:errno:)``.
enum FileOperations {
    static func exists(_ path: String) -> Bool {
        var status = stat()
        return lstat(path, &status) == 0
    }

    static func isDirectory(_ path: String) -> Bool {
        var status = stat()
        return stat(path, &status) == 0 && (status.st_mode & S_IFMT) == S_IFDIR
    }

    static func size(_ path: String) -> Int64 {
        var status = stat()
        return stat(path, &status) == 0 ? Int64(status.st_size) : 0
    }

    /// The names in a directory (without `.` and `..`).
    static func entries(_ path: String) throws(PipelineError) -> [String] {
        do {
            return try FileManager.default.contentsOfDirectory(atPath: path).sorted()
        } catch {
            throw .io(operation: "list", path: path, errno: EIO)
        }
    }

    static func makeDirectory(_ path: String, intermediate: Bool = false) throws(PipelineError) {
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: intermediate)
        } catch {
            throw .io(operation: "mkdir", path: path, errno: EIO)
        }
    }

    /// Removes a file or a directory tree; a missing path is fine.
    static func remove(_ path: String) {
        guard exists(path) else { return }
        try? FileManager.default.removeItem(atPath: path)
    }

    static func rename(_ from: String, to: String) throws(PipelineError) {
        guard Glibc.rename(from, to) == 0 else { throw .io(operation: "rename", path: to, errno: errno) }
    }

    /// Writes `bytes` to a new file at `path` and flushes it to stable storage.
    static func writeDurably(_ bytes: [UInt8], to path: String) throws(PipelineError) {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw .io(operation: "create", path: path, errno: errno) }
        defer { close(descriptor) }
        var written = 0
        while written < bytes.count {
            let count = bytes[written...].withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            guard count > 0 else { throw .io(operation: "write", path: path, errno: errno) }
            written += count
        }
        guard fsync(descriptor) == 0 else { throw .io(operation: "fsync", path: path, errno: errno) }
    }

    /// Flushes a file or directory (its entries) to stable storage.
    static func sync(_ path: String) throws(PipelineError) {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw .io(operation: "open", path: path, errno: errno) }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else { throw .io(operation: "fsync", path: path, errno: errno) }
    }

    static func read(_ path: String) -> [UInt8]? {
        FileManager.default.contents(atPath: path).map { Array($0) }
    }

    /// Atomically swaps two directory entries with `renameat2(RENAME_EXCHANGE)`; false when the kernel, the C
    /// library or the file system does not offer it (nothing was changed then).
    static func exchange(_ first: String, _ second: String) throws(PipelineError) -> Bool {
        typealias RenameAt2 = @convention(c) (
            Int32, UnsafePointer<CChar>?, Int32, UnsafePointer<CChar>?, UInt32
        ) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "renameat2") else { return false }
        let renameat2 = unsafeBitCast(symbol, to: RenameAt2.self)
        let renameExchange: UInt32 = 2
        guard renameat2(AT_FDCWD, first, AT_FDCWD, second, renameExchange) == 0 else {
            let code = errno
            if code == ENOSYS || code == EINVAL || code == ENOTSUP { return false }
            throw .io(operation: "exchange", path: second, errno: code)
        }
        return true
    }
}
