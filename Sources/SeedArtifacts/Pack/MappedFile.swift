#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A regular file mapped read-only, unmapped when released: the previous seed a patch refers to
/// (``PackOptions/patchFrom``, ``UnpackOptions/patchFrom``). The pages are the file's own, so they count against the
/// page cache rather than the heap, and libzstd reads them in place as the frame's reference prefix.
final class MappedFile {
    let path: String
    let bytes: UnsafeRawBufferPointer

    init(path: String) throws(PackError) {
        let input = try PackInputFile(path: path)
        self.path = path
        let size = Int(input.size)
        guard size > 0 else {
            bytes = UnsafeRawBufferPointer(start: nil, count: 0)
            return
        }
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw .io(operation: "open", path: path, errno: errno) }
        defer { close(descriptor) }
        guard let base = mmap(nil, size, PROT_READ, MAP_PRIVATE, descriptor, 0), base != MAP_FAILED else {
            throw .io(operation: "map", path: path, errno: errno)
        }
        bytes = UnsafeRawBufferPointer(start: base, count: size)
    }

    deinit {
        if let base = bytes.baseAddress { munmap(UnsafeMutableRawPointer(mutating: base), bytes.count) }
    }
}
