/// The first 100 bytes of a SQLite database as they come out of a decompressor: checked before anything is
/// written, so a packed "seed" that is not a database is refused after 100 bytes, and one that is goes no further
/// than the size its header declares (`spec/seed-format.md` §2: a seed is written by a SQLite that records its
/// size in the header). Without this, a small frame of zeros behind a valid-looking header could fill the
/// temporary directory up to the unpack limit before the probe looks at the result.
struct SQLiteHeaderGate {
    /// The header bytes received so far (at most ``SeedFileProbe/headerBytes``).
    private(set) var header: [UInt8] = []
    /// The database size the header declares, once the header is complete and valid.
    private(set) var declaredBytes: Int64?

    /// Whether the header is complete and checked.
    var isOpen: Bool { declaredBytes != nil }

    /// Takes up to the rest of the header from `bytes` and returns how many it took; once the header is complete,
    /// checks it and learns the declared size.
    mutating func take(_ bytes: UnsafeRawBufferPointer) throws(PackError) -> Int {
        let count = min(bytes.count, SeedFileProbe.headerBytes - header.count)
        header += bytes.prefix(count)
        if header.count == SeedFileProbe.headerBytes {
            declaredBytes = try Self.declaredSize(of: header)
        }
        return count
    }

    /// The size a complete header declares: page size × in-header page count, valid only when the
    /// version-valid-for number equals the change counter.
    static func declaredSize(of header: [UInt8]) throws(PackError) -> Int64 {
        guard header.starts(with: SeedFileProbe.sqliteMagic) else {
            throw .notSQLiteDatabase(reason: "the content does not begin with the SQLite header")
        }
        let pageSize = SeedFileProbe.pageSize(header)
        guard pageSize > 0 else { throw .notSQLiteDatabase(reason: "the header's page size is invalid") }
        let pageCount = Int64(SeedFileProbe.u32(header, at: 28))
        guard pageCount > 0, SeedFileProbe.u32(header, at: 92) == SeedFileProbe.u32(header, at: 24) else {
            throw .notSQLiteDatabase(reason: "the header declares no database size")
        }
        return pageCount * pageSize
    }
}
