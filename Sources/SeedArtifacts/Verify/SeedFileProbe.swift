import Glibc
import SQLiteKit

/// What the first bytes and the size of a seed file say before SQLite opens it: a usable SQLite database, a zstd
/// frame to unpack first, or unusable input (``SeedInputError``).
///
/// SQLite opens a file shorter than its header describes and reports the missing pages only when they are read;
/// the probe refuses it up front instead, since no check of a truncated seed means anything.
enum SeedFileProbe {
    enum Kind: Equatable {
        case sqlite
        case zstd
    }

    static let sqliteMagic: [UInt8] = Array("SQLite format 3".utf8) + [0]
    static let zstdMagic: [UInt8] = [0x28, 0xB5, 0x2F, 0xFD]
    static let headerBytes = 100

    /// Classifies the file at `path`, throwing for anything that cannot be a seed.
    static func probe(_ path: String) throws(SeedInputError) -> Kind {
        var info = stat()
        guard stat(path, &info) == 0 else {
            if errno == ENOENT || errno == ENOTDIR { throw .notFound(path: path) }
            throw .unreadable(path: path, errno: errno)
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else { throw .notARegularFile(path: path) }
        let size = Int64(info.st_size)
        let header = try readHeader(path)
        if header.starts(with: zstdMagic) { return .zstd }
        guard header.count >= sqliteMagic.count, header.starts(with: sqliteMagic) else { throw .notSQLite(path: path) }
        guard header.count == headerBytes else {
            throw .truncated(path: path, bytes: size, expectedBytes: Int64(headerBytes))
        }
        let pageSize = Self.pageSize(header)
        guard pageSize > 0 else { throw .notSQLite(path: path) }
        guard size >= pageSize, size % pageSize == 0 else {
            throw .truncated(path: path, bytes: size, expectedBytes: (size / pageSize + 1) * pageSize)
        }
        // The in-header page count is valid only when the version-valid-for number equals the change counter.
        let pageCount = Int64(u32(header, at: 28))
        if pageCount > 0, u32(header, at: 92) == u32(header, at: 24), size < pageCount * pageSize {
            throw .truncated(path: path, bytes: size, expectedBytes: pageCount * pageSize)
        }
        return .sqlite
    }

    /// The page size of bytes 16–17 (1 means 65536); 0 when it is not a power of two in 512…65536.
    static func pageSize(_ header: [UInt8]) -> Int64 {
        let raw = Int64(header[16]) << 8 | Int64(header[17])
        let size = raw == 1 ? 65_536 : raw
        guard size >= 512, size <= 65_536, size & (size - 1) == 0 else { return 0 }
        return size
    }

    static func u32(_ bytes: [UInt8], at offset: Int) -> UInt32 {
        bytes[offset..<(offset + 4)].reduce(0) { $0 << 8 | UInt32($1) }
    }

    private static func readHeader(_ path: String) throws(SeedInputError) -> [UInt8] {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw .unreadable(path: path, errno: errno) }
        defer { close(descriptor) }
        var header = [UInt8](repeating: 0, count: headerBytes)
        var filled = 0
        while filled < headerBytes {
            let count = header.withUnsafeMutableBytes { buffer in
                read(descriptor, buffer.baseAddress! + filled, headerBytes - filled)
            }
            if count < 0 {
                if errno == EINTR { continue }
                throw .unreadable(path: path, errno: errno)
            }
            if count == 0 { break }
            filled += count
        }
        return Array(header.prefix(filled))
    }

    /// The `-wal`, `-shm` and `-journal` files that exist next to `path`.
    static func sidecars(of path: String) -> [String] {
        ["-wal", "-shm", "-journal"].filter { suffix in
            var info = stat()
            return lstat(path + suffix, &info) == 0
        }
    }

    /// Opens `path` read-only and `immutable=1`, with a bounded page cache and no memory map: a mapped seed counts
    /// in the process's resident memory page by page as it is read, so a mapping of the whole file makes the
    /// verifier's memory grow with the seed (issue #5) while reading through the cache keeps it at the cache size.
    /// 2 MiB: the checks scan the tables in order, and a larger cache only costs its allocation (16 MiB took about
    /// 9 ms more CPU per verify of the 100,040-row seed).
    ///
    /// The connection is guarded by `meter` (``BudgetMeter/guardConnection(_:triggers:)``): the seed's views cannot
    /// be read, and every statement counts against the verification's budget.
    static func openImmutable(_ path: String, meter: BudgetMeter) throws(SQLiteError) -> Connection {
        let connection = try Connection(path: immutableURI(path), mode: .readOnly, uri: true)
        try meter.guardConnection(connection)
        try connection.execute("PRAGMA mmap_size = 0; PRAGMA cache_size = -2048")
        return connection
    }

    /// A `file:` URI opening `path` read-only with `immutable=1`: SQLite then takes no lock, creates no sidecar and
    /// ignores any journal or WAL file, so the checks see exactly the bytes of the seed file.
    static func immutableURI(_ path: String) -> String {
        var uri = "file:"
        for byte in path.utf8 {
            switch byte {
            case UInt8(ascii: "%"), UInt8(ascii: "?"), UInt8(ascii: "#"), 0..<0x21, 0x7F...:
                uri += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            default:
                uri.unicodeScalars.append(Unicode.Scalar(byte))
            }
        }
        return uri + "?immutable=1"
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
