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
/// The same comparison of a table's index b-trees proves that the table and its indexes are the seed's page for
/// page (``tablesProvenWithIndexes(on:)``), which the installer's integrity check relies on.
///
/// Anything short of that — a rewritten page, a moved root, a platform without `dbstat` — proves nothing, and the
/// caller compares the table row by row instead.
final class SeedPageIdentity {
    /// Where the copy's pages are read.
    private enum Pages {
        /// A file, read a page at a time.
        case file(PagedFile)
        /// An in-memory database, read through a connection's VFS file (nothing writes to it meanwhile).
        case connection(Connection)
    }

    private let copy: Pages
    private let seed: PagedFile
    private let pageSize: Int
    /// Reserved bytes at the end of each page (seed header byte 20).
    private let reservedBytes: Int
    /// The page of the copy last read. Pages are read one at a time into two buffers (the copy's and the seed's)
    /// rather than mapped, so that proving a table keeps two pages resident, not the files (issue #5).
    private let page: UnsafeMutableRawBufferPointer
    /// The page of the seed last read.
    private let seedPage: UnsafeMutableRawBufferPointer
    /// The outcome of each b-tree walked so far, by root page.
    private var walks: [Int64: Walk] = [:]

    /// Opens both files; nil when either cannot be read or their headers differ in the fields that decide how a
    /// page is read.
    convenience init?(copy copyPath: String, seed seedPath: String) {
        guard let copy = PagedFile(copyPath) else { return nil }
        self.init(copy: .file(copy), seed: seedPath)
    }

    /// Compares the main database of `connection` (an in-memory copy that nothing writes to while this object is
    /// used) with the seed file; nil as for files.
    convenience init?(copyOpenedBy connection: Connection, seed seedPath: String) {
        self.init(copy: .connection(connection), seed: seedPath)
    }

    private init?(copy: Pages, seed seedPath: String) {
        guard let seed = PagedFile(seedPath), seed.size >= 100 else { return nil }
        let page = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 16)
        let seedPage = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 16)
        guard let header = Self.bytes(of: copy, at: 0, count: 100, buffer: page),
              let seedHeader = seed.read(at: 0, count: 100, into: seedPage),
              // Bytes 16–17: page size; 20–23: reserved bytes and payload fractions; 44–47: schema format;
              // 56–59: text encoding. (Bytes 18–19 differ: the client switches the copy to WAL.)
              ByteRange.equal(header + 16, seedHeader + 16, count: 2),
              ByteRange.equal(header + 20, seedHeader + 20, count: 4),
              ByteRange.equal(header + 44, seedHeader + 44, count: 4),
              ByteRange.equal(header + 56, seedHeader + 56, count: 4),
              case let raw = Int(header[16]) << 8 | Int(header[17]), raw == 1 || raw >= 512
        else {
            page.deallocate()
            seedPage.deallocate()
            return nil
        }
        pageSize = raw == 1 ? 65_536 : raw
        reservedBytes = Int(seedHeader[20])
        self.copy = copy
        self.seed = seed
        self.page = page
        self.seedPage = seedPage
    }

    deinit {
        page.deallocate()
        seedPage.deallocate()
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
            guard same == 1, let root = try connection.scalar(
                "SELECT rootpage FROM main.sqlite_schema WHERE type = 'table' AND name = ?1", [.text(name)]
            )?.integerValue else { return false }
            switch walk(root: root) {
            case .identical: return true
            case .different: return false
            case .unread: break
            }
            let pages = try connection.query("SELECT pageno FROM dbstat('main') WHERE name = ?1", [.text(name)]) {
                $0.int64(at: 0)
            }
            return !pages.isEmpty && pages.allSatisfy(isIdentical)
        } catch {
            return false
        }
    }

    /// The tables of the copy (`main` on `connection`, with the seed attached as `seed`) that are, with all their
    /// indexes, page for page the seed's: the table and each index have the same schema entry in both files (type,
    /// name, table, root page and SQL text, none missing or added) and every page of every one of their b-trees is
    /// identical (``walk(root:)``). Whatever `PRAGMA integrity_check` finds about such a table — its b-trees, its
    /// rows against its NOT NULL and CHECK constraints, each index's entries against the rows, UNIQUE — it finds in
    /// both files alike, since it reads the same octets under the same definitions (the headers agree on page size,
    /// reserved bytes, text encoding and schema format). Empty when the schemas cannot be read.
    ///
    /// An index is grouped with its table by `tbl_name`: SQLite refuses to open a schema whose index row names
    /// another table than its `CREATE INDEX` does ("malformed database schema"), so that is the table it checks the
    /// index against.
    func tablesProvenWithIndexes(on connection: Connection) -> Set<String> {
        struct Entry: Hashable {
            let type: String
            let name: String
            let root: Int64
            let sql: String?
        }
        func entries(_ schema: String) throws -> [String: Set<Entry>] {
            let sql = "SELECT tbl_name, type, name, rootpage, sql FROM \(schema).sqlite_schema "
                + "WHERE type IN ('table', 'index')"
            let rows = try connection.query(sql) { row in
                (table: try row.text(at: 0),
                 Entry(type: try row.text(at: 1), name: try row.text(at: 2), root: row.int64(at: 3),
                       sql: row.isNull(at: 4) ? nil : try row.text(at: 4)))
            }
            return Dictionary(grouping: rows, by: \.table).mapValues { Set($0.map(\.1)) }
        }
        do {
            let copy = try entries("main")
            let seed = try entries("seed")
            var proven = Set<String>()
            for (table, objects) in copy where objects.contains(where: { $0.type == "table" && $0.name == table }) {
                guard seed[table] == objects, objects.allSatisfy({ walk(root: $0.root) == .identical }) else {
                    continue
                }
                proven.insert(table)
            }
            return proven
        } catch {
            return []
        }
    }

    /// The outcome of ``walk(root:)``.
    enum Walk: Equatable {
        /// Every page of the b-tree is identical in both files.
        case identical
        /// A page of the b-tree differs, or is missing from the seed.
        case different
        /// The b-tree holds a page this walk does not read (not a b-tree page of the root's kind, a cell or pointer
        /// out of place): `dbstat` lists the pages instead.
        case unread
    }

    /// Visits the b-tree rooted at `root` — a table's (rowid keys) or an index's (record keys, also a `WITHOUT ROWID`
    /// table's) — as SQLite reads it: interior pages, their children, leaf pages and each cell's overflow chain (as
    /// many pages as its payload needs), comparing each page with the seed's page of the same number before reading
    /// it. An identical page holds the same child and overflow page numbers in both files, so the seed's walk visits
    /// the same pages: this is `dbstat`'s list of the tree's pages without reading the copy's pages through SQLite
    /// and analysing every cell's payload. Each root is walked once; later calls return the first outcome.
    func walk(root: Int64) -> Walk {
        if let known = walks[root] { return known }
        let outcome = walkTree(root: root)
        walks[root] = outcome
        return outcome
    }

    private func walkTree(root: Int64) -> Walk {
        let usable = pageSize - reservedBytes
        // Payload thresholds of the file format: the most a table leaf or an index cell keeps on its page (X), the
        // least kept when a payload spills (M) and an overflow page's capacity.
        let tableMaxLocal = usable - 35
        let indexMaxLocal = (usable - 12) * 64 / 255 - 23
        let minLocal = (usable - 12) * 32 / 255 - 23
        let overflowCapacity = usable - 4
        guard root >= 1, minLocal > 0 else { return .unread }
        var visited = Set<Int64>()
        var stack: [Int64] = [root]
        var isTableTree: Bool?
        // Overflow chains are compared after a page's cells are read: comparing reuses the page buffer.
        var chains: [(first: Int64, pages: Int)] = []
        while let number = stack.popLast() {
            guard visited.insert(number).inserted else { return .unread }
            guard isIdentical(number) else { return .different }
            let page = comparedPage
            let header = number == 1 ? 100 : 0
            let type = page[header]
            // 0x05 and 0x0D: table interior and leaf; 0x02 and 0x0A: index interior and leaf.
            let isTable = type == 0x05 || type == 0x0D
            guard isTable || type == 0x02 || type == 0x0A, isTableTree.map({ $0 == isTable }) ?? true else {
                return .unread
            }
            isTableTree = isTable
            let interior = type == 0x05 || type == 0x02
            let headerSize = interior ? 12 : 8
            let count = TableCells.u16(page, header + 3)
            guard header + headerSize + 2 * count <= usable else { return .unread }
            if interior { stack.append(Int64(TableCells.u32(page, header + 8))) }
            for index in 0..<count {
                var offset = TableCells.u16(page, header + headerSize + 2 * index)
                guard offset >= header + headerSize, offset + (interior ? 4 : 1) <= usable else { return .unread }
                if interior {
                    stack.append(Int64(TableCells.u32(page, offset)))
                    offset += 4
                }
                // A table interior cell holds a child and a rowid; every other cell a payload.
                guard type != 0x05 else { continue }
                guard let (payload, sizeLength) = TableCells.varint(page, offset, limit: usable),
                      payload <= UInt64(Int32.max)
                else { return .unread }
                offset += sizeLength
                if type == 0x0D {
                    guard let (_, rowidLength) = TableCells.varint(page, offset, limit: usable) else { return .unread }
                    offset += rowidLength
                }
                let size = Int(payload)
                let maxLocal = isTable ? tableMaxLocal : indexMaxLocal
                guard size > maxLocal else {
                    guard offset + size <= usable else { return .unread }
                    continue
                }
                let surplus = minLocal + (size - minLocal) % overflowCapacity
                let local = surplus <= maxLocal ? surplus : minLocal
                guard offset + local + 4 <= usable else { return .unread }
                chains.append((Int64(TableCells.u32(page, offset + local)),
                               (size - local + overflowCapacity - 1) / overflowCapacity))
            }
            for chain in chains {
                let outcome = overflowChain(from: chain.first, pages: chain.pages, visited: &visited)
                guard outcome == .identical else { return outcome }
            }
            chains.removeAll(keepingCapacity: true)
        }
        return .identical
    }

    /// Compares the `pages` pages of an overflow chain starting at `first`, each naming the next in its first four
    /// octets.
    private func overflowChain(from first: Int64, pages: Int, visited: inout Set<Int64>) -> Walk {
        var number = first
        for index in 0..<pages {
            guard visited.insert(number).inserted else { return .unread }
            guard isIdentical(number) else { return .different }
            if index + 1 < pages { number = Int64(TableCells.u32(comparedPage, 0)) }
        }
        return .identical
    }

    /// The copy's page last compared by ``isIdentical(_:)`` (equal to the seed's when it returned true).
    private var comparedPage: UnsafePointer<UInt8> {
        UnsafePointer(page.baseAddress.unsafelyUnwrapped.assumingMemoryBound(to: UInt8.self))
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
            let cells = TableCells(usableSize: pageSize - reservedBytes)
            let seedPages = seed.size / pageSize
            let readCopy: TableCells.PageReader = { [copy, page, pageSize] number in
                Self.bytes(of: copy, at: (number - 1) * pageSize, count: pageSize, buffer: page)
            }
            let readSeed: TableCells.PageReader = { [seed, seedPage, pageSize] number in
                number >= 1 && number <= seedPages
                    ? seed.read(at: (number - 1) * pageSize, count: pageSize, into: seedPage) : nil
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
        guard let bytes = Self.bytes(of: copy, at: offset, count: pageSize, buffer: page),
              let seedBytes = seed.read(at: offset, count: pageSize, into: seedPage)
        else { return false }
        return ByteRange.equal(bytes, seedBytes, count: pageSize)
    }

    /// `count` (at most `buffer.count`) octets of the copy at `offset`, read into `buffer`; nil past its end or when
    /// they cannot be read.
    private static func bytes(
        of copy: Pages, at offset: Int, count: Int, buffer: UnsafeMutableRawBufferPointer
    ) -> UnsafePointer<UInt8>? {
        switch copy {
        case .file(let file):
            return file.read(at: offset, count: count, into: buffer)
        case .connection(let connection):
            guard count <= buffer.count, let base = buffer.baseAddress,
                  connection.readFile(at: Int64(offset), into: UnsafeMutableRawBufferPointer(start: base, count: count))
            else { return nil }
            return UnsafePointer(base.assumingMemoryBound(to: UInt8.self))
        }
    }
}

/// A file read with `pread` into a caller's buffer, so that only the pages being compared are resident; closed when
/// released.
private final class PagedFile {
    private let descriptor: Int32
    let size: Int

    init?(_ path: String) {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_size > 0 else {
            close(descriptor)
            return nil
        }
        self.descriptor = descriptor
        size = Int(info.st_size)
    }

    deinit {
        close(descriptor)
    }

    /// `count` (at most `buffer.count`) octets at `offset`, read into `buffer`; nil past the end of the file or when
    /// they cannot be read.
    func read(at offset: Int, count: Int, into buffer: UnsafeMutableRawBufferPointer) -> UnsafePointer<UInt8>? {
        guard offset >= 0, count <= buffer.count, offset + count <= size, let base = buffer.baseAddress else {
            return nil
        }
        var done = 0
        while done < count {
            let read = pread(descriptor, base + done, count - done, off_t(offset + done))
            if read < 0 && errno == EINTR { continue }
            guard read > 0 else { return nil }
            done += read
        }
        return UnsafePointer(base.assumingMemoryBound(to: UInt8.self))
    }
}

private enum ByteRange {
    static func equal(_ a: UnsafePointer<UInt8>, _ b: UnsafePointer<UInt8>, count: Int) -> Bool {
        memcmp(a, b, count) == 0
    }
}
