#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A regular file opened for reading front to back in fixed-size chunks, closed when released.
final class PackInputFile {
    let path: String
    /// The size at open time.
    let size: Int64
    private let descriptor: Int32

    init(path: String) throws(PackError) {
        // Non-blocking, so that opening a FIFO cannot wait for a writer; regular files ignore the flag.
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else { throw .io(operation: "open", path: path, errno: errno) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            let code = errno
            close(descriptor)
            throw .io(operation: "stat", path: path, errno: code)
        }
        guard (status.st_mode & S_IFMT) == S_IFREG else {
            close(descriptor)
            throw .notRegularFile(path: path)
        }
        self.path = path
        self.descriptor = descriptor
        size = Int64(status.st_size)
        #if canImport(Glibc)
        _ = posix_fadvise(descriptor, 0, 0, POSIX_FADV_SEQUENTIAL)
        #endif
    }

    deinit {
        close(descriptor)
    }

    /// Fills `buffer` from the current position; fewer bytes than its size only at the end of the file.
    func read(into buffer: UnsafeMutableRawBufferPointer) throws(PackError) -> Int {
        guard let base = buffer.baseAddress else { return 0 }
        var filled = 0
        while filled < buffer.count {
            let count = systemRead(descriptor, base + filled, buffer.count - filled)
            if count == 0 { break }
            if count < 0 {
                if errno == EINTR { continue }
                throw .io(operation: "read", path: path, errno: errno)
            }
            filled += count
        }
        return filled
    }
}

/// `read(2)`, named apart from ``PackInputFile/read(into:)``.
private func systemRead(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int {
    read(descriptor, buffer, count)
}
