/// The cells of a rowid table's b-tree in rowid order, read straight from its pages: each leaf cell is the row's
/// rowid and its record (the values with their serial types, so their storage classes), octet for octet. Two tables
/// with the same column definitions whose cell sequences are equal hold the same rows — however the rows are spread
/// over pages and wherever the pages are — which proves a table the migration rebuilt row for row (v13's scope
/// tables) without reading its rows through SQL.
///
/// Only what it understands is read: a table b-tree whose pages are within the file, visited at most once, with no
/// record spilling to an overflow page. Anything else yields nil, and the caller compares the rows through SQL.
struct TableCells {
    /// Returns page `number` (1-based) of a file: `pageSize` octets, valid until the next call.
    typealias PageReader = (_ number: Int) -> UnsafePointer<UInt8>?

    /// Page size minus the reserved bytes at the end of each page.
    let usableSize: Int

    /// The leaf pages of the b-tree rooted at `root` in a file of `pageCount` pages, in key order; nil when the tree
    /// is not a well-formed table b-tree of the file.
    func leaves(root: Int, pageCount: Int, read: PageReader) -> [Int]? {
        var leaves: [Int] = []
        var visited = Set<Int>()
        // Depth first, left to right: the stack holds the pages still to visit, the next one on top.
        var stack = [root]
        while let number = stack.popLast() {
            guard number >= 1, number <= pageCount, visited.insert(number).inserted, let page = read(number) else {
                return nil
            }
            let header = number == 1 ? 100 : 0
            switch page[header] {
            case 0x0D:
                leaves.append(number)
            case 0x05:
                let count = Self.u16(page, header + 3)
                var children: [Int] = []
                children.reserveCapacity(count + 1)
                guard header + 12 + 2 * count <= usableSize else { return nil }
                for index in 0..<count {
                    let offset = Self.u16(page, header + 12 + 2 * index)
                    guard offset + 4 <= usableSize else { return nil }
                    children.append(Self.u32(page, offset))
                }
                children.append(Self.u32(page, header + 8))
                stack.append(contentsOf: children.reversed())
            default:
                return nil
            }
        }
        return leaves
    }

    /// Whether the leaf cells of `leftLeaves` (read with `left`) equal those of `rightLeaves` (read with `right`),
    /// in order, and how many there are; nil when a cell cannot be read (an overflow page, a cell past the page).
    /// The two readers must not share a buffer.
    func equalCells(
        _ leftLeaves: [Int], _ left: @escaping PageReader, _ rightLeaves: [Int], _ right: @escaping PageReader
    ) -> (equal: Bool, cells: Int)? {
        var a = Cursor(leaves: leftLeaves, read: left, layout: self)
        var b = Cursor(leaves: rightLeaves, read: right, layout: self)
        var cells = 0
        while true {
            guard let x = a.next(), let y = b.next() else { return nil }
            switch (x, y) {
            case (.end, .end):
                return (true, cells)
            case (.cell(let first), .cell(let second)):
                guard OctetRange.equal(first, second) else { return (false, cells) }
                cells += 1
            default:
                return (false, cells)
            }
        }
    }

    private enum Item {
        /// Valid until the cursor reads its next page.
        case cell(UnsafeBufferPointer<UInt8>)
        case end
    }

    /// Walks the cells of a list of leaf pages, reading each page once.
    private struct Cursor {
        let leaves: [Int]
        let read: PageReader
        let layout: TableCells
        var leaf = 0
        var cell = 0
        var page: UnsafePointer<UInt8>?
        var loaded = -1

        init(leaves: [Int], read: @escaping PageReader, layout: TableCells) {
            self.leaves = leaves
            self.read = read
            self.layout = layout
        }

        /// The next cell's octets, `.end` after the last, nil when it cannot be read.
        mutating func next() -> Item? {
            while leaf < leaves.count {
                let number = leaves[leaf]
                if loaded != leaf {
                    guard let bytes = read(number) else { return nil }
                    page = bytes
                    loaded = leaf
                }
                guard let page else { return nil }
                let header = number == 1 ? 100 : 0
                let count = TableCells.u16(page, header + 3)
                guard cell < count else {
                    leaf += 1
                    cell = 0
                    continue
                }
                let pointer = header + 8 + 2 * cell
                guard pointer + 2 <= layout.usableSize else { return nil }
                let start = TableCells.u16(page, pointer)
                cell += 1
                guard start < layout.usableSize,
                      let (payload, sizeLength) = TableCells.varint(page, start, limit: layout.usableSize),
                      let (_, rowidLength) = TableCells.varint(page, start + sizeLength, limit: layout.usableSize),
                      payload <= UInt64(layout.usableSize - 35)
                else { return nil }
                let end = start + sizeLength + rowidLength + Int(payload)
                guard end <= layout.usableSize else { return nil }
                return .cell(UnsafeBufferPointer(start: page + start, count: end - start))
            }
            return .end
        }
    }

    static func u16(_ page: UnsafePointer<UInt8>, _ offset: Int) -> Int {
        Int(page[offset]) << 8 | Int(page[offset + 1])
    }

    static func u32(_ page: UnsafePointer<UInt8>, _ offset: Int) -> Int {
        Int(page[offset]) << 24 | Int(page[offset + 1]) << 16 | Int(page[offset + 2]) << 8 | Int(page[offset + 3])
    }

    /// SQLite's variable-length integer at `offset` and its length; nil when it runs past `limit`.
    static func varint(_ page: UnsafePointer<UInt8>, _ offset: Int, limit: Int) -> (UInt64, Int)? {
        var value: UInt64 = 0
        for index in 0..<9 {
            guard offset + index < limit else { return nil }
            let byte = page[offset + index]
            if index == 8 { return (value << 8 | UInt64(byte), 9) }
            value = value << 7 | UInt64(byte & 0x7F)
            if byte & 0x80 == 0 { return (value, index + 1) }
        }
        return nil
    }
}
