import Foundation
import Glibc

/// The plain file-system questions and operations the publishing code needs, each one system call or a short loop
/// of them, with failures as ``SystemError``.
package enum FileSystem {
    /// True when anything (a file, a directory, a dangling symbolic link) is at `path`.
    package static func exists(_ path: String) -> Bool {
        var status = stat()
        return lstat(path, &status) == 0
    }

    /// True when `path` is a directory (following a symbolic link).
    package static func isDirectory(_ path: String) -> Bool {
        var status = stat()
        return stat(path, &status) == 0 && (status.st_mode & S_IFMT) == S_IFDIR
    }

    /// True when `path` is a regular file (following a symbolic link).
    package static func isRegularFile(_ path: String) -> Bool {
        var status = stat()
        return stat(path, &status) == 0 && (status.st_mode & S_IFMT) == S_IFREG
    }

    /// The size of the file at `path` in bytes, or 0 when it cannot be read.
    package static func size(of path: String) -> Int64 {
        var status = stat()
        return stat(path, &status) == 0 ? Int64(status.st_size) : 0
    }

    /// The whole content of the file at `path`, or nil when it cannot be read.
    package static func read(_ path: String) -> [UInt8]? {
        FileManager.default.contents(atPath: path).map { Array($0) }
    }

    /// The whole content of the file at `path`; a failure carries the path and the operating system's reason
    /// (`cannot open t.txt: Permission denied`), for messages that tell the user what to fix.
    package static func readAll(_ path: String) throws(SystemError) -> [UInt8] {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw .last("open", path: path) }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw .last("read", path: path)
            }
            if count == 0 { return bytes }
            bytes += buffer[..<count]
        }
    }

    /// The names in the directory at `path`, sorted, without `.` and `..`.
    package static func entries(_ path: String) throws(SystemError) -> [String] {
        guard let directory = opendir(path) else { throw .last("list", path: path) }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names.sorted()
    }

    /// Creates the directory `path` (mode 0777 less the umask); with `intermediate`, its missing parents too, and
    /// an existing directory is then no error.
    package static func makeDirectory(_ path: String, intermediate: Bool = false) throws(SystemError) {
        if mkdir(path, 0o777) == 0 { return }
        let code = errno
        if intermediate {
            if code == EEXIST && isDirectory(path) { return }
            let parent = (path as NSString).deletingLastPathComponent
            if code == ENOENT && !parent.isEmpty && parent != path {
                try makeDirectory(parent, intermediate: true)
                if mkdir(path, 0o777) == 0 || (errno == EEXIST && isDirectory(path)) { return }
                throw .last("create the directory", path: path)
            }
        }
        throw SystemError(operation: "create the directory", path: path, code: code)
    }

    /// Removes a file, or a directory with everything in it; a missing path is fine.
    package static func removeTree(_ path: String) {
        guard exists(path) else { return }
        try? FileManager.default.removeItem(atPath: path)
    }

    /// Removes `path` and every `path + suffix`; missing files are fine. Throws for the first removal that failed
    /// for another reason than absence, after trying every one.
    package static func removeFamily(_ path: String, suffixes: [String]) throws(SystemError) {
        var failure: SystemError?
        for name in [path] + suffixes.map({ path + $0 }) where unlink(name) != 0 && errno != ENOENT {
            failure = failure ?? .last("remove", path: name)
        }
        if let failure { throw failure }
    }

    /// Renames `from` to `to` (`rename(2)`: atomic, replacing a file at `to`).
    package static func rename(_ from: String, to: String) throws(SystemError) {
        guard Glibc.rename(from, to) == 0 else { throw .last("rename into", path: to) }
    }

    /// Flushes a file, or a directory's entries, to stable storage (`fsync(2)`).
    package static func sync(_ path: String) throws(SystemError) {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw .last("open", path: path) }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else { throw .last("fsync", path: path) }
    }

    /// Atomically swaps two directory entries with `renameat2(RENAME_EXCHANGE)`; false, with nothing changed, when
    /// the kernel, the C library or the file system does not offer it.
    package static func exchange(_ first: String, _ second: String) throws(SystemError) -> Bool {
        typealias RenameAt2 = @convention(c) (
            Int32, UnsafePointer<CChar>?, Int32, UnsafePointer<CChar>?, UInt32
        ) -> Int32
        // Looked up at run time: older C libraries do not export it, and the package must still load there.
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "renameat2") else { return false }
        let renameat2 = unsafeBitCast(symbol, to: RenameAt2.self)
        let renameExchange: UInt32 = 2
        guard renameat2(AT_FDCWD, first, AT_FDCWD, second, renameExchange) == 0 else {
            let code = errno
            if code == ENOSYS || code == EINVAL || code == ENOTSUP { return false }
            throw SystemError(operation: "exchange", path: second, code: code)
        }
        return true
    }

    /// The directory (`.` when none is named, `/` for the root) and the last component of `path`.
    package static func split(_ path: String) -> (directory: String, name: String) {
        guard let slash = path.lastIndex(of: "/") else { return (".", path) }
        let directory = String(path[..<slash])
        return (directory.isEmpty ? "/" : directory, String(path[path.index(after: slash)...]))
    }
}

/// Files and directories only their owner may read: client stores, server databases and scratch space hold
/// credentials' effects, cursors and row values, so they are created private whatever the umask (issue #19).
package enum PrivateFiles {
    /// Creates an empty file at `path` with mode 0600 when nothing is there, so that SQLite opening it next keeps
    /// that mode (SQLite gives a database's `-wal`, `-shm` and `-journal` files the database's own mode). An
    /// existing file keeps its mode.
    package static func createIfMissing(_ path: String) throws(SystemError) {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        if descriptor >= 0 {
            close(descriptor)
            return
        }
        let code = errno
        guard code == EEXIST else { throw SystemError(operation: "create", path: path, code: code) }
    }

    /// A new directory `<temporary directory>/<prefix>-XXXXXX` with mode 0700 (`mkdtemp`), where `TMPDIR` names
    /// the temporary directory when it is set.
    package static func makeTemporaryDirectory(prefix: String) throws(SystemError) -> String {
        let base = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        var template = Array((base.hasSuffix("/") ? base : base + "/").utf8CString.dropLast())
            + Array("\(prefix)-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        guard made != nil else { throw SystemError(operation: "create a private directory in", path: base, code: errno) }
        return template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }
}
