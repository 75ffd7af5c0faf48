import Foundation
import Glibc
import SQLiteKit
import Testing
import _SeedkitTestSupport

@Suite("CopyOnWriteFile: a database written through an overlay reads as a byte copy written the same way")
struct CopyOnWriteFileTests {
    /// A base database of `rows` rows of 200 octets each, in pages of `pageSize`.
    private func makeBase(_ path: String, pageSize: Int, rows: Int = 4000) throws {
        let connection = try Connection(path: path)
        defer { connection.close() }
        try connection.execute("""
            PRAGMA page_size = \(pageSize);
            CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT);
            CREATE TABLE kept(id INTEGER PRIMARY KEY, v TEXT);
            INSERT INTO t WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(rows))
                SELECT i, printf('%.200c', 'a') FROM n;
            INSERT INTO kept SELECT * FROM t;
            """)
    }

    /// The same writes on `connection`: WAL, updates, a new table, a drop and a VACUUM that shrinks the file.
    private func writeTheSameWay(_ connection: Connection, vacuum: Bool) throws {
        try connection.execute("""
            PRAGMA journal_mode = WAL;
            UPDATE t SET v = 'changed' WHERE id % 97 = 0;
            CREATE TABLE added(x);
            INSERT INTO added VALUES (1), (2);
            DELETE FROM t WHERE id > 3000;
            """)
        if vacuum { try connection.execute("DROP TABLE kept; VACUUM") }
        _ = try? connection.checkpoint(.truncate)
    }

    private func bytes(_ path: String) throws -> [UInt8] {
        Array(try Data(contentsOf: URL(fileURLWithPath: path)))
    }

    /// The whole database of `connection` read through its VFS.
    private func bytes(through connection: Connection, count: Int) -> [UInt8]? {
        var result = [UInt8](repeating: 0, count: count)
        let read = result.withUnsafeMutableBytes { connection.readFile(at: 0, into: $0) }
        return read ? result : nil
    }

    @Test("the base is untouched, the overlay reads as the written copy, and it holds only the blocks written",
          arguments: [512, 4096, 16384], [false, true])
    func overlayReadsAsACopy(pageSize: Int, vacuum: Bool) throws {
        let directory = try TemporaryDirectory(prefix: "sqlitekit-cow")
        let base = directory.path("base.db")
        try makeBase(base, pageSize: pageSize)
        let original = try bytes(base)
        let copy = directory.path("copy.db")
        try FileManager.default.copyItem(atPath: base, toPath: copy)
        let plain = try Connection(path: copy)
        try writeTheSameWay(plain, vacuum: vacuum)
        plain.close()
        let expected = try bytes(copy)

        let overlay = try CopyOnWriteFile(base: base, overlay: directory.path("overlay.db"))
        defer { overlay.close() }
        let writer = try Connection(path: overlay.uri, uri: true)
        try writeTheSameWay(writer, vacuum: vacuum)
        writer.close()
        #expect(try bytes(base) == original)

        let reader = try Connection(path: overlay.immutableURI, mode: .readOnly, uri: true)
        defer { reader.close() }
        #expect(try reader.scalar("PRAGMA page_count")?.integerValue == Int64(expected.count / pageSize))
        #expect(bytes(through: reader, count: expected.count) == expected)
        #expect(try reader.integrityCheck(.full) == ["ok"])
        #expect(try reader.scalar("SELECT count(*) FROM t WHERE v = 'changed'")?.integerValue == 30)
        if !vacuum {
            #expect(overlay.writtenBytes < Int64(original.count) / 2,
                    "\(overlay.writtenBytes) octets written for a \(original.count)-octet base")
        }
        var info = stat()
        #expect(stat(overlay.path, &info) == 0)
        #expect(Int64(info.st_blocks) * 512 <= overlay.writtenBytes + 65_536)
    }

    @Test("another database attached to an overlay's connection is opened as itself, not through the overlay")
    func attachedDatabaseIsItself() throws {
        let directory = try TemporaryDirectory(prefix: "sqlitekit-cow")
        let base = directory.path("base.db")
        try makeBase(base, pageSize: 4096, rows: 10)
        let other = directory.path("other.db")
        let setup = try Connection(path: other)
        try setup.execute("CREATE TABLE o(x); INSERT INTO o VALUES (42)")
        setup.close()
        let overlay = try CopyOnWriteFile(base: base, overlay: directory.path("overlay.db"))
        defer { overlay.close() }
        let connection = try Connection(path: overlay.uri, uri: true)
        defer { connection.close() }
        try connection.run("ATTACH DATABASE ? AS other", [.text(other)])
        #expect(try connection.scalar("SELECT x FROM other.o")?.integerValue == 42)
        #expect(try connection.scalar("SELECT count(*) FROM t")?.integerValue == 10)
    }

    @Test("a connection still open when the overlay closes keeps reading it; a new one cannot open it")
    func connectionOutlivesTheRegistration() throws {
        let directory = try TemporaryDirectory(prefix: "sqlitekit-cow")
        let base = directory.path("base.db")
        try makeBase(base, pageSize: 4096, rows: 500)
        let overlay = try CopyOnWriteFile(base: base, overlay: directory.path("overlay.db"))
        let writer = try Connection(path: overlay.uri, uri: true)
        try writer.execute("UPDATE t SET v = 'x' WHERE id <= 10")
        let uri = overlay.uri
        overlay.close()
        #expect(try writer.scalar("SELECT count(*) FROM t WHERE v = 'x'")?.integerValue == 10)
        #expect(try writer.integrityCheck(.full) == ["ok"])
        writer.close()
        #expect(throws: SQLiteError.self) { try Connection(path: uri, uri: true) }
    }

    @Test("an existing overlay path is refused and left as it was")
    func existingOverlayIsRefused() throws {
        let directory = try TemporaryDirectory(prefix: "sqlitekit-cow")
        let base = directory.path("base.db")
        try makeBase(base, pageSize: 4096, rows: 10)
        let taken = directory.path("taken.db")
        try Data("keep".utf8).write(to: URL(fileURLWithPath: taken))
        #expect(throws: CopyOnWriteFile.SetupFailure.self) {
            try CopyOnWriteFile(base: base, overlay: taken)
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: taken)) == Data("keep".utf8))
    }
}
