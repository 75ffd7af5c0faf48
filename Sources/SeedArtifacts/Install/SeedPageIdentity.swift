import Glibc
import SQLiteKit

/// Proves that a table of the migrated copy holds exactly the rows of the same table in the seed it was copied
/// from, by its pages instead of its rows: the copy starts as a byte copy of the seed, and the migration rewrites
/// only the pages it touches. When the table has the same root page and the same `CREATE TABLE` text in both
/// files, the files agree on page size, reserved bytes and text encoding, and every page of the copy's b-tree
/// (interior, leaf and overflow pages, as `dbstat` walks it) is byte-identical to the seed's page of the same
/// number, then a walk of the seed's b-tree from that root visits the same pages and reads the same records: the
/// same rowids, values and storage classes.
///
/// Anything short of that — a rewritten page, a moved root, a platform without `dbstat` — proves nothing, and the
/// caller compares the table row by row instead.
final class SeedPageIdentity {
    /// Where the copy's pages are read.
    private enum Pages {
        /// A file, mapped.
        case mapped(MappedFile)
        /// An in-memory database, read through a connection's VFS file (nothing writes to it meanwhile).
        case file(of: Connection)
    }

    private let copy: Pages
    private let seed: MappedFile
    private let pageSize: Int
    /// One page of an in-memory copy, read in place of a mapping.
    private let page: UnsafeMutableRawBufferPointer

    /// Maps both files; nil when either cannot be mapped or their headers differ in the fields that decide how a
    /// page is read.
    convenience init?(copy copyPath: String, seed seedPath: String) {
        guard let copy = MappedFile(copyPath) else { return nil }
        self.init(copy: .mapped(copy), seed: seedPath)
    }

    /// Compares the main database of `connection` (an in-memory copy that nothing writes to while this object is
    /// used) with the mapped seed file; nil as for files.
    convenience init?(copyOpenedBy connection: Connection, seed seedPath: String) {
        self.init(copy: .file(of: connection), seed: seedPath)
    }

    private init?(copy: Pages, seed seedPath: String) {
        guard let seed = MappedFile(seedPath), seed.size >= 100 else { return nil }
        let page = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 16)
        guard let header = Self.bytes(of: copy, at: 0, count: 100, buffer: page),
              // Bytes 16–17: page size; 20–23: reserved bytes and payload fractions; 56–59: text encoding. (Bytes
              // 18–19 differ: the client switches the copy to WAL.)
              ByteRange.equal(header + 16, seed.bytes + 16, count: 2),
              ByteRange.equal(header + 20, seed.bytes + 20, count: 4),
              ByteRange.equal(header + 56, seed.bytes + 56, count: 4),
              case let raw = Int(header[16]) << 8 | Int(header[17]), raw == 1 || raw >= 512
        else {
            page.deallocate()
            return nil
        }
        pageSize = raw == 1 ? 65_536 : raw
        self.copy = copy
        self.seed = seed
        self.page = page
    }

    deinit {
        page.deallocate()
    }

    /// Whether table `name` of the copy (`main` on `connection`, with the seed attached as `seed`) is page for page
    /// the seed's table. Any SQLite failure counts as unproven.
    func proves(table name: String, on connection: Connection) -> Bool {
        do {
            let same = try connection.scalar("""
                SELECT m.rootpage = o.rootpage AND m.sql = o.sql
                FROM main.sqlite_schema AS m JOIN seed.sqlite_schema AS o ON o.type = 'table' AND o.name = m.name
                WHERE m.type = 'table' AND m.name = ?1
                """, [.text(name)])?.integerValue
            guard same == 1 else { return false }
            let pages = try connection.query("SELECT pageno FROM dbstat('main') WHERE name = ?1", [.text(name)]) {
                $0.int64(at: 0)
            }
            return !pages.isEmpty && pages.allSatisfy(isIdentical)
        } catch {
            return false
        }
    }

    /// Whether table `name` of the copy holds exactly the rows of the seed's table `name` (`main` and `seed` on
    /// `connection`), compared cell for cell (``TableCells``): for a table the migration rebuilt, whose pages moved.
    /// Both must be rowid tables with the same column definitions (so that equal records read as equal rows). False
    /// whenever that cannot be shown this way (the caller then compares the rows through SQL).
    func provesByCells(table name: String, on connection: Connection) -> Bool {
        do {
            let definition = "SELECT name, type, \"notnull\", dflt_value, pk FROM pragma_table_info(?1, ?2)"
            let mainColumns = try connection.rows(definition, [.text(name), .text("main")])
            guard !mainColumns.isEmpty, mainColumns == (try connection.rows(definition, [.text(name), .text("seed")]))
            else { return false }
            let shape = "SELECT count(*) FROM pragma_table_list WHERE name = ?1 AND schema = ?2 AND type = 'table' "
                + "AND wr = 0"
            let root = "SELECT rootpage FROM %@.sqlite_schema WHERE type = 'table' AND name = ?1"
            guard try connection.scalar(shape, [.text(name), .text("main")])?.integerValue == 1,
                  try connection.scalar(shape, [.text(name), .text("seed")])?.integerValue == 1,
                  let copyRoot = try connection.scalar(root.replacingOccurrences(of: "%@", with: "main"),
                                                       [.text(name)])?.integerValue,
                  let seedRoot = try connection.scalar(root.replacingOccurrences(of: "%@", with: "seed"),
                                                       [.text(name)])?.integerValue,
                  let copyPages = try connection.scalar("PRAGMA main.page_count")?.integerValue
            else { return false }
            let cells = TableCells(usableSize: pageSize - Int(seed.bytes[20]))
            let seedPages = seed.size / pageSize
            let readCopy: TableCells.PageReader = { [copy, page, pageSize] number in
                Self.bytes(of: copy, at: (number - 1) * pageSize, count: pageSize, buffer: page)
            }
            let readSeed: TableCells.PageReader = { [seed, pageSize] number in
                number >= 1 && number <= seedPages ? seed.bytes + (number - 1) * pageSize : nil
            }
            guard let copyLeaves = cells.leaves(root: Int(copyRoot), pageCount: Int(copyPages), read: readCopy),
                  let seedLeaves = cells.leaves(root: Int(seedRoot), pageCount: seedPages, read: readSeed),
                  let compared = cells.equalCells(copyLeaves, readCopy, seedLeaves, readSeed), compared.equal
            else { return false }
            // Every row was among the cells compared: the walks missed no part of either tree.
            let quoted = SQLiteIdentifier.quote(name)
            return try connection.scalar("SELECT count(*) FROM main.\(quoted)")?.integerValue == Int64(compared.cells)
                && connection.scalar("SELECT count(*) FROM seed.\(quoted)")?.integerValue == Int64(compared.cells)
        } catch {
            return false
        }
    }

    /// Whether page `number` (1-based) exists in both files with the same octets.
    private func isIdentical(_ number: Int64) -> Bool {
        guard number >= 1, number <= Int64(seed.size / pageSize) else { return false }
        let offset = Int(number - 1) * pageSize
        guard let bytes = Self.bytes(of: copy, at: offset, count: pageSize, buffer: page) else { return false }
        return ByteRange.equal(bytes, seed.bytes + offset, count: pageSize)
    }

    /// `count` (at most `buffer.count`) octets of the copy at `offset`, in place for a mapping, else read into
    /// `buffer`; nil past its end or when they cannot be read.
    private static func bytes(
        of copy: Pages, at offset: Int, count: Int, buffer: UnsafeMutableRawBufferPointer
    ) -> UnsafePointer<UInt8>? {
        switch copy {
        case .mapped(let file):
            guard offset + count <= file.size else { return nil }
            return file.bytes + offset
        case .file(let connection):
            guard count <= buffer.count, let base = buffer.baseAddress,
                  connection.readFile(at: Int64(offset), into: UnsafeMutableRawBufferPointer(start: base, count: count))
            else { return nil }
            return UnsafePointer(base.assumingMemoryBound(to: UInt8.self))
        }
    }
}

/// A whole file mapped read-only; unmapped when released.
private final class MappedFile {
    let bytes: UnsafePointer<UInt8>
    let size: Int

    init?(_ path: String) {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_size > 0 else { return nil }
        size = Int(info.st_size)
        guard let address = mmap(nil, size, PROT_READ, MAP_SHARED, descriptor, 0), address != MAP_FAILED else {
            return nil
        }
        bytes = UnsafePointer(address.assumingMemoryBound(to: UInt8.self))
    }

    deinit {
        munmap(UnsafeMutableRawPointer(mutating: bytes), size)
    }
}

private enum ByteRange {
    static func equal(_ a: UnsafePointer<UInt8>, _ b: UnsafePointer<UInt8>, count: Int) -> Bool {
        memcmp(a, b, count) == 0
    }
}
