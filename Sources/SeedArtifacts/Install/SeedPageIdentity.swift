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
    private let copy: MappedFile
    private let seed: MappedFile
    private let pageSize: Int

    /// Maps both files; nil when either cannot be mapped or their headers differ in the fields that decide how a
    /// page is read.
    init?(copy copyPath: String, seed seedPath: String) {
        guard let copy = MappedFile(copyPath), let seed = MappedFile(seedPath), copy.size >= 100, seed.size >= 100
        else { return nil }
        // Bytes 16–17: page size; 20–23: reserved bytes and payload fractions; 56–59: text encoding. (Bytes 18–19
        // differ: the client switches the copy to WAL.)
        guard ByteRange.equal(copy.bytes + 16, seed.bytes + 16, count: 2),
              ByteRange.equal(copy.bytes + 20, seed.bytes + 20, count: 4),
              ByteRange.equal(copy.bytes + 56, seed.bytes + 56, count: 4)
        else { return nil }
        let raw = Int(copy.bytes[16]) << 8 | Int(copy.bytes[17])
        pageSize = raw == 1 ? 65_536 : raw
        guard pageSize >= 512 else { return nil }
        self.copy = copy
        self.seed = seed
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

    /// Whether page `number` (1-based) exists in both files with the same octets.
    private func isIdentical(_ number: Int64) -> Bool {
        guard number >= 1, number <= Int64(min(copy.size, seed.size) / pageSize) else { return false }
        let offset = Int(number - 1) * pageSize
        return ByteRange.equal(copy.bytes + offset, seed.bytes + offset, count: pageSize)
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
