import CSQLite
import Glibc
import Synchronization

/// A database file that starts as the bytes of an existing file (the base, never written) and keeps only what is
/// written to it: a copy-on-write overlay behind a VFS of its own. Connections that open ``uri`` read every block of
/// 4 KiB that was never written from the base, and write whole blocks to the overlay file, a sparse file at `path`
/// that holds exactly the blocks written (a block written in part is first filled from what it held). The file
/// size, truncation and extension are tracked as a plain file would have them, so a connection cannot tell the
/// overlay from a byte copy of the base made at ``init(base:overlay:)`` and then written the same way: every read
/// returns the octets the copy would hold.
///
/// Journals, WAL and shared-memory files are the default VFS's own files next to `path`; locks are taken on the
/// overlay file. Any other database opened through the VFS (an `ATTACH`) is passed to the default VFS unchanged.
///
/// Used where a copy of a large database is migrated and inspected, then thrown away: only the pages the migration
/// rewrites are written. The base must not change while the overlay is open. ``close()`` must come after every
/// connection opened on ``uri`` has closed.
public final class CopyOnWriteFile {
    /// A file operation that failed while the overlay was set up (`errno`); names the operation and the path only.
    public struct SetupFailure: Error, Sendable, Equatable {
        public let operation: String
        public let path: String
        public let code: Int32
    }

    /// The overlay file: the blocks written, the rest a hole.
    public let path: String
    /// The VFS name, unique in the process while the overlay is open.
    public let vfsName: String
    private let state: OverlayState
    /// Whether the VFS is still registered.
    private var registered = false

    /// The granularity of the overlay: a block is read from the base until something writes to it.
    static let blockSize: Int64 = 4096

    /// Opens `base` read-only and creates the overlay file `overlay` (which must not exist), then registers the VFS.
    public init(base: String, overlay: String) throws(SetupFailure) {
        guard let inner = sqlite3_vfs_find(nil), let innerName = inner.pointee.zName else {
            throw SetupFailure(operation: "find the default VFS", path: overlay, code: ENOSYS)
        }
        let descriptor = open(base, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw SetupFailure(operation: "open", path: base, code: errno) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else {
            let code = errno
            Glibc.close(descriptor)
            throw SetupFailure(operation: "stat", path: base, code: code)
        }
        let created = open(overlay, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard created >= 0 else {
            let code = errno
            Glibc.close(descriptor)
            throw SetupFailure(operation: "create", path: overlay, code: code)
        }
        Glibc.close(created)
        let fullPath = Self.fullPathname(overlay, vfs: inner) ?? overlay
        let memory = VFSMemory()
        state = OverlayState(
            base: descriptor, size: Int64(info.st_size), fullPath: fullPath, innerVFS: String(cString: innerName),
            memory: memory)
        path = overlay
        vfsName = memory.name
        memory.vfs.initialize(to: Self.vfs(
            name: memory.cName, over: inner, appData: Unmanaged.passRetained(state).toOpaque()))
        memory.methods.initialize(to: overlayMethods)
        guard sqlite3_vfs_register(memory.vfs, 0) == SQLITE_OK else {
            Unmanaged<OverlayState>.fromOpaque(memory.vfs.pointee.pAppData).release()
            unlink(overlay)
            throw SetupFailure(operation: "register the overlay VFS", path: overlay, code: EINVAL)
        }
        registered = true
    }

    deinit {
        close()
    }

    /// The `file:` URI a connection opens the overlay with (read-write; it needs URI filenames).
    public var uri: String {
        Self.fileURI(path) + "?vfs=" + vfsName
    }

    /// The URI of a read-only `immutable=1` connection to the overlay: no lock, no sidecar, the file's bytes only.
    public var immutableURI: String {
        uri + "&immutable=1"
    }

    /// The octets the overlay file holds: the blocks written so far, each ``blockSize`` long.
    public var writtenBytes: Int64 {
        state.layout.withLock { Int64($0.written) * Self.blockSize }
    }

    /// Unregisters the VFS, so that no new connection opens the overlay; the VFS's memory lives until the last of
    /// its files has closed. The overlay file stays (the caller removes it).
    public func close() {
        guard registered else { return }
        registered = false
        let vfs = state.memory.vfs
        sqlite3_vfs_unregister(vfs)
        // A file still open (a connection closed after this call) keeps the state, and so the VFS's memory.
        Unmanaged<OverlayState>.fromOpaque(vfs.pointee.pAppData).release()
    }

    /// `file:` and `path` with `%`, `?`, `#`, controls, spaces and non-ASCII octets percent-encoded.
    public static func fileURI(_ path: String) -> String {
        var uri = "file:"
        for byte in path.utf8 {
            switch byte {
            case UInt8(ascii: "%"), UInt8(ascii: "?"), UInt8(ascii: "#"), 0..<0x21, 0x7F...:
                let hex = String(byte, radix: 16, uppercase: true)
                uri += "%" + (hex.count < 2 ? "0" + hex : hex)
            default:
                uri.unicodeScalars.append(Unicode.Scalar(byte))
            }
        }
        return uri
    }

    /// The name SQLite passes to `xOpen` for `path`: the default VFS's full pathname of it.
    private static func fullPathname(_ path: String, vfs: UnsafeMutablePointer<sqlite3_vfs>) -> String? {
        let capacity = Int(vfs.pointee.mxPathname) + 1
        let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: capacity)
        defer { buffer.deallocate() }
        guard let full = vfs.pointee.xFullPathname, full(vfs, path, Int32(capacity), buffer) == SQLITE_OK else {
            return nil
        }
        return String(cString: buffer)
    }

    /// The overlay VFS: `xOpen` of its own, every other method the default VFS's (called with the default VFS).
    private static func vfs(
        name: UnsafePointer<CChar>, over inner: UnsafeMutablePointer<sqlite3_vfs>, appData: UnsafeMutableRawPointer
    ) -> sqlite3_vfs {
        var vfs = sqlite3_vfs()
        vfs.iVersion = 2
        vfs.szOsFile = Int32(OverlayLayout.innerOffset) + inner.pointee.szOsFile
        vfs.mxPathname = inner.pointee.mxPathname
        vfs.zName = name
        vfs.pAppData = appData
        vfs.xOpen = { vfs, name, file, flags, outFlags in
            guard let vfs, let file, let data = vfs.pointee.pAppData else { return SQLITE_ERROR }
            let state = Unmanaged<OverlayState>.fromOpaque(data).takeUnretainedValue()
            guard let inner = sqlite3_vfs_find(state.innerVFS), let open = inner.pointee.xOpen else {
                return SQLITE_ERROR
            }
            guard flags & SQLITE_OPEN_MAIN_DB != 0, let name, String(cString: name) == state.fullPath else {
                return open(inner, name, file, flags, outFlags)
            }
            file.pointee.pMethods = nil
            let code = open(inner, name, OverlayLayout.inner(file), flags, outFlags)
            guard code == SQLITE_OK else { return code }
            UnsafeMutableRawPointer(file).storeBytes(
                of: Unmanaged.passRetained(state).toOpaque(), toByteOffset: OverlayLayout.stateOffset,
                as: UnsafeMutableRawPointer.self)
            file.pointee.pMethods = UnsafePointer(state.memory.methods)
            return SQLITE_OK
        }
        vfs.xDelete = { _, name, sync in
            guard let inner = sqlite3_vfs_find(nil) else { return SQLITE_ERROR }
            return inner.pointee.xDelete?(inner, name, sync) ?? SQLITE_ERROR
        }
        vfs.xAccess = { _, name, flags, result in
            guard let inner = sqlite3_vfs_find(nil) else { return SQLITE_ERROR }
            return inner.pointee.xAccess?(inner, name, flags, result) ?? SQLITE_ERROR
        }
        vfs.xFullPathname = { _, name, count, output in
            guard let inner = sqlite3_vfs_find(nil) else { return SQLITE_ERROR }
            return inner.pointee.xFullPathname?(inner, name, count, output) ?? SQLITE_ERROR
        }
        vfs.xDlOpen = { _, name in
            guard let inner = sqlite3_vfs_find(nil) else { return nil }
            return inner.pointee.xDlOpen?(inner, name)
        }
        vfs.xDlError = { _, count, output in
            guard let inner = sqlite3_vfs_find(nil) else { return }
            inner.pointee.xDlError?(inner, count, output)
        }
        vfs.xDlSym = { _, handle, symbol in
            guard let inner = sqlite3_vfs_find(nil) else { return nil }
            return inner.pointee.xDlSym?(inner, handle, symbol)
        }
        vfs.xDlClose = { _, handle in
            guard let inner = sqlite3_vfs_find(nil) else { return }
            inner.pointee.xDlClose?(inner, handle)
        }
        vfs.xRandomness = { _, count, output in
            guard let inner = sqlite3_vfs_find(nil) else { return 0 }
            return inner.pointee.xRandomness?(inner, count, output) ?? 0
        }
        vfs.xSleep = { _, microseconds in
            guard let inner = sqlite3_vfs_find(nil) else { return 0 }
            return inner.pointee.xSleep?(inner, microseconds) ?? 0
        }
        vfs.xCurrentTime = { _, time in
            guard let inner = sqlite3_vfs_find(nil) else { return SQLITE_ERROR }
            return inner.pointee.xCurrentTime?(inner, time) ?? SQLITE_ERROR
        }
        vfs.xGetLastError = { _, count, output in
            guard let inner = sqlite3_vfs_find(nil) else { return 0 }
            return inner.pointee.xGetLastError?(inner, count, output) ?? 0
        }
        vfs.xCurrentTimeInt64 = { _, time in
            guard let inner = sqlite3_vfs_find(nil) else { return SQLITE_ERROR }
            guard let current = inner.pointee.xCurrentTimeInt64 else { return SQLITE_ERROR }
            return current(inner, time)
        }
        return vfs
    }
}

/// What every connection's files of one overlay share: the base descriptor and which blocks were written.
final class OverlayState: Sendable {
    struct Layout {
        /// The file size a connection sees.
        var size: Int64
        /// The base is visible below this offset only: a truncation below the base's size hides the rest for good
        /// (what a file extended again reads there is zeros).
        var baseLimit: Int64
        /// One bit per block: set once the block lives in the overlay file.
        var bits: [UInt64] = []
        /// Blocks set in `bits`.
        var written = 0

        func isWritten(_ block: Int64) -> Bool {
            let word = Int(block >> 6)
            return word < bits.count && bits[word] & (1 << UInt64(block & 63)) != 0
        }

        mutating func markWritten(_ block: Int64) {
            let word = Int(block >> 6)
            if word >= bits.count { bits.append(contentsOf: repeatElement(0, count: word - bits.count + 1)) }
            let mask: UInt64 = 1 << UInt64(block & 63)
            if bits[word] & mask == 0 {
                bits[word] |= mask
                written += 1
            }
        }
    }

    let base: Int32
    let fullPath: String
    let innerVFS: String
    let layout: Mutex<Layout>
    /// The registered `sqlite3_vfs` and the methods of the overlay's files: every open file retains this state, so
    /// they are freed only after the VFS is unregistered and its last file closed.
    let memory: VFSMemory

    init(base: Int32, size: Int64, fullPath: String, innerVFS: String, memory: VFSMemory) {
        self.base = base
        self.fullPath = fullPath
        self.innerVFS = innerVFS
        self.memory = memory
        layout = Mutex(Layout(size: size, baseLimit: size))
    }

    deinit {
        Glibc.close(base)
    }
}

/// The C memory of one overlay VFS: the `sqlite3_vfs`, followed by the `sqlite3_io_methods` its files point to, and
/// its name. `@unchecked Sendable`: written once before the VFS is registered, freed only by `deinit`.
final class VFSMemory: @unchecked Sendable {
    private let raw: UnsafeMutableRawPointer
    let cName: UnsafeMutablePointer<CChar>
    let name: String

    init() {
        raw = UnsafeMutableRawPointer.allocate(
            byteCount: MemoryLayout<sqlite3_vfs>.stride + MemoryLayout<sqlite3_io_methods>.stride, alignment: 16)
        raw.bindMemory(to: sqlite3_vfs.self, capacity: 1)
        (raw + MemoryLayout<sqlite3_vfs>.stride).bindMemory(to: sqlite3_io_methods.self, capacity: 1)
        name = "seedkit-cow-" + String(UInt(bitPattern: raw), radix: 16)
        cName = strdup(name)
    }

    deinit {
        raw.deallocate()
        free(cName)
    }

    var vfs: UnsafeMutablePointer<sqlite3_vfs> {
        raw.assumingMemoryBound(to: sqlite3_vfs.self)
    }

    var methods: UnsafeMutablePointer<sqlite3_io_methods> {
        (raw + MemoryLayout<sqlite3_vfs>.stride).assumingMemoryBound(to: sqlite3_io_methods.self)
    }
}

/// Where an overlay file keeps its parts: the `sqlite3_file` SQLite sees, the retained ``OverlayState``, then the
/// default VFS's file of the overlay path.
private enum OverlayLayout {
    static let stateOffset = 8
    static let innerOffset = 16

    static func state(_ file: UnsafeMutablePointer<sqlite3_file>) -> OverlayState {
        let raw = UnsafeMutableRawPointer(file).load(fromByteOffset: stateOffset, as: UnsafeMutableRawPointer.self)
        return Unmanaged<OverlayState>.fromOpaque(raw).takeUnretainedValue()
    }

    static func inner(_ file: UnsafeMutablePointer<sqlite3_file>) -> UnsafeMutablePointer<sqlite3_file> {
        (UnsafeMutableRawPointer(file) + innerOffset).assumingMemoryBound(to: sqlite3_file.self)
    }

    static func methods(_ file: UnsafeMutablePointer<sqlite3_file>) -> sqlite3_io_methods? {
        inner(file).pointee.pMethods?.pointee
    }
}

// MARK: - Reads and writes of an overlay file

private enum OverlayIO {
    static let block = CopyOnWriteFile.blockSize

    /// Fills `buffer` with `count` octets at `offset` as a byte copy would hold them: written blocks from the overlay
    /// file, the others from the base (zeros past the base limit); `IOError.shortRead` past the end.
    static func read(
        _ file: UnsafeMutablePointer<sqlite3_file>, _ buffer: UnsafeMutableRawPointer, _ count: Int64, _ offset: Int64
    ) -> Int32 {
        let state = OverlayLayout.state(file)
        let (size, limit) = state.layout.withLock { ($0.size, $0.baseLimit) }
        let end = min(offset + count, size)
        var position = offset
        while position < end {
            let written = state.layout.withLock { $0.isWritten(position / block) }
            var runEnd = min((position / block + 1) * block, end)
            while runEnd < end, state.layout.withLock({ $0.isWritten(runEnd / block) }) == written {
                runEnd = min(runEnd + block, end)
            }
            let target = buffer + Int(position - offset)
            let length = runEnd - position
            if written {
                guard let read = OverlayLayout.methods(file)?.xRead else { return IOError.read }
                let code = read(OverlayLayout.inner(file), target, Int32(length), position)
                // A hole at the end of the overlay file reads as the zeros it holds.
                guard code == SQLITE_OK || code == IOError.shortRead else { return code }
            } else {
                guard readBase(state.base, target, length, position, limit: limit) else { return IOError.read }
            }
            position = runEnd
        }
        if offset + count > end {
            let from = max(end, offset)
            memset(buffer + Int(from - offset), 0, Int(offset + count - from))
            return IOError.shortRead
        }
        return SQLITE_OK
    }

    /// `length` octets of the base at `offset`, zeros from `limit` on.
    private static func readBase(
        _ descriptor: Int32, _ target: UnsafeMutableRawPointer, _ length: Int64, _ offset: Int64, limit: Int64
    ) -> Bool {
        let available = max(0, min(length, limit - offset))
        var done: Int64 = 0
        while done < available {
            let count = pread(descriptor, target + Int(done), Int(available - done), off_t(offset + done))
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { return false }
            if count == 0 { break }
            done += Int64(count)
        }
        if done < length { memset(target + Int(done), 0, Int(length - done)) }
        return true
    }

    /// Writes `count` octets at `offset` to the overlay file; a block it covers only in part is first copied whole
    /// into the overlay (as the reads see it), so that each block is either entirely the base's or entirely the
    /// overlay's.
    static func write(
        _ file: UnsafeMutablePointer<sqlite3_file>, _ buffer: UnsafeRawPointer, _ count: Int64, _ offset: Int64
    ) -> Int32 {
        let state = OverlayLayout.state(file)
        guard let methods = OverlayLayout.methods(file), let write = methods.xWrite else { return IOError.write }
        let inner = OverlayLayout.inner(file)
        let end = offset + count
        let first = offset / block
        let last = (end - 1) / block
        for number in [first, last] where !state.layout.withLock({ $0.isWritten(number) }) {
            let start = number * block
            guard offset > start || end < start + block else { continue }
            let whole = UnsafeMutableRawPointer.allocate(byteCount: Int(block), alignment: 16)
            defer { whole.deallocate() }
            let code = read(file, whole, block, start)
            guard code == SQLITE_OK || code == IOError.shortRead else { return code }
            let copied = write(inner, whole, Int32(block), start)
            guard copied == SQLITE_OK else { return copied }
            state.layout.withLock { $0.markWritten(number) }
            if first == last { break }
        }
        let code = write(inner, buffer, Int32(count), offset)
        guard code == SQLITE_OK else { return code }
        state.layout.withLock { layout in
            for number in first...last { layout.markWritten(number) }
            layout.size = max(layout.size, end)
        }
        return SQLITE_OK
    }

    static func truncate(_ file: UnsafeMutablePointer<sqlite3_file>, _ size: Int64) -> Int32 {
        let state = OverlayLayout.state(file)
        guard let truncate = OverlayLayout.methods(file)?.xTruncate else { return IOError.truncate }
        let code = truncate(OverlayLayout.inner(file), size)
        guard code == SQLITE_OK else { return code }
        state.layout.withLock { layout in
            layout.size = size
            layout.baseLimit = min(layout.baseLimit, size)
        }
        return SQLITE_OK
    }
}

/// The methods of an overlay file: reads, writes, truncation and size of their own; locks, syncs, file controls
/// and shared memory on the default VFS's file of the overlay path.
private let overlayMethods: sqlite3_io_methods = {
    var methods = sqlite3_io_methods()
    methods.iVersion = 2
    methods.xClose = { file in
        guard let file else { return SQLITE_OK }
        let inner = OverlayLayout.inner(file)
        let code = inner.pointee.pMethods?.pointee.xClose?(inner) ?? SQLITE_OK
        let raw = UnsafeMutableRawPointer(file).load(
            fromByteOffset: OverlayLayout.stateOffset, as: UnsafeMutableRawPointer.self)
        Unmanaged<OverlayState>.fromOpaque(raw).release()
        file.pointee.pMethods = nil
        return code
    }
    methods.xRead = { file, buffer, count, offset in
        guard let file, let buffer, count >= 0 else { return IOError.read }
        return OverlayIO.read(file, buffer, Int64(count), offset)
    }
    methods.xWrite = { file, buffer, count, offset in
        guard let file, let buffer, count > 0 else { return count == 0 ? SQLITE_OK : IOError.write }
        return OverlayIO.write(file, buffer, Int64(count), offset)
    }
    methods.xTruncate = { file, size in
        guard let file else { return IOError.truncate }
        return OverlayIO.truncate(file, size)
    }
    methods.xSync = { file, flags in
        guard let file, let sync = OverlayLayout.methods(file)?.xSync else { return IOError.fsync }
        return sync(OverlayLayout.inner(file), flags)
    }
    methods.xFileSize = { file, size in
        guard let file, let size else { return IOError.fstat }
        size.pointee = OverlayLayout.state(file).layout.withLock { $0.size }
        return SQLITE_OK
    }
    methods.xLock = { file, level in
        guard let file, let lock = OverlayLayout.methods(file)?.xLock else { return IOError.lock }
        return lock(OverlayLayout.inner(file), level)
    }
    methods.xUnlock = { file, level in
        guard let file, let unlock = OverlayLayout.methods(file)?.xUnlock else { return IOError.unlock }
        return unlock(OverlayLayout.inner(file), level)
    }
    methods.xCheckReservedLock = { file, result in
        guard let file, let check = OverlayLayout.methods(file)?.xCheckReservedLock else {
            return IOError.checkReservedLock
        }
        return check(OverlayLayout.inner(file), result)
    }
    methods.xFileControl = { file, operation, argument in
        guard let file, let control = OverlayLayout.methods(file)?.xFileControl else { return SQLITE_NOTFOUND }
        // A size hint would grow the overlay file, not the size the overlay reports: no hint is taken.
        if operation == SQLITE_FCNTL_SIZE_HINT { return SQLITE_OK }
        return control(OverlayLayout.inner(file), operation, argument)
    }
    methods.xSectorSize = { file in
        guard let file, let sector = OverlayLayout.methods(file)?.xSectorSize else { return 4096 }
        return sector(OverlayLayout.inner(file))
    }
    methods.xDeviceCharacteristics = { file in
        guard let file, let characteristics = OverlayLayout.methods(file)?.xDeviceCharacteristics else { return 0 }
        return characteristics(OverlayLayout.inner(file))
    }
    methods.xShmMap = { file, region, size, extend, pointer in
        guard let file, let map = OverlayLayout.methods(file)?.xShmMap else { return IOError.shmMap }
        return map(OverlayLayout.inner(file), region, size, extend, pointer)
    }
    methods.xShmLock = { file, offset, count, flags in
        guard let file, let lock = OverlayLayout.methods(file)?.xShmLock else { return IOError.shmLock }
        return lock(OverlayLayout.inner(file), offset, count, flags)
    }
    methods.xShmBarrier = { file in
        guard let file, let barrier = OverlayLayout.methods(file)?.xShmBarrier else { return }
        barrier(OverlayLayout.inner(file))
    }
    methods.xShmUnmap = { file, delete in
        guard let file, let unmap = OverlayLayout.methods(file)?.xShmUnmap else { return SQLITE_OK }
        return unmap(OverlayLayout.inner(file), delete)
    }
    return methods
}()

/// The extended `SQLITE_IOERR_*` codes an overlay file returns (C macros Swift does not import).
private enum IOError {
    static let read = SQLITE_IOERR | (1 << 8)
    static let shortRead = SQLITE_IOERR | (2 << 8)
    static let write = SQLITE_IOERR | (3 << 8)
    static let fsync = SQLITE_IOERR | (4 << 8)
    static let truncate = SQLITE_IOERR | (6 << 8)
    static let fstat = SQLITE_IOERR | (7 << 8)
    static let unlock = SQLITE_IOERR | (8 << 8)
    static let checkReservedLock = SQLITE_IOERR | (14 << 8)
    static let lock = SQLITE_IOERR | (15 << 8)
    static let shmLock = SQLITE_IOERR | (20 << 8)
    static let shmMap = SQLITE_IOERR | (21 << 8)
}
