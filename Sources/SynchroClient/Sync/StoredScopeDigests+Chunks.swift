import SQLiteKit
import SynchroProtocol

/// The stored entries of each maintained scope also kept as packed chunks in identity order, so that a steady
/// verification hashes a few hundred stored runs instead of stepping through one entry per row (docs/decisions.md,
/// "Scope digest input kept as packed chunks"). The server keeps the same shape over `membership`
/// (`MembershipChunks`).
///
/// A chunk holds the entries of one key range of its scope, `[lower, next chunk's lower)`, as their preimage
/// contributions back to back (`u64be(length) || identity || row_digest`). The chunks are a cache of
/// `_synchro_seedkit_row_digests`, never a source: triggers on the entries mark the chunk whose range holds each
/// inserted, deleted or updated entry dirty in the same statement (a stale digest is an update to NULL), and a dirty
/// range, or the part of a scope below its first chunk, is read entry by entry as before until the verification
/// that read it packs it again. A scope without chunks (while ``StoredScopeDigests/rewrite(scope:on:_:)`` refills its
/// entries, the triggers do nothing for it) is read entry by entry.
extension StoredScopeDigests {
    static let chunks = "_synchro_seedkit_digest_chunks"
    static let dirtyChunks = "_synchro_seedkit_dirty_chunks"

    /// Members a chunk is built with.
    static let targetMembers = 512
    /// A packed range with more entries is split into chunks of about ``targetMembers``.
    static let maximumMembers = 1024
    /// A packed range with fewer entries absorbs the next chunk.
    static let minimumMembers = 128

    static let chunkLayout = """
        CREATE TABLE IF NOT EXISTS _synchro_seedkit_digest_chunks (
            chunk INTEGER PRIMARY KEY, scope_id TEXT NOT NULL, lower BLOB NOT NULL, members INTEGER NOT NULL,
            octets BLOB NOT NULL, UNIQUE (scope_id, lower));
        CREATE TABLE IF NOT EXISTS _synchro_seedkit_dirty_chunks (
            scope_id TEXT NOT NULL, lower BLOB NOT NULL, PRIMARY KEY (scope_id, lower)) WITHOUT ROWID;
        CREATE TRIGGER IF NOT EXISTS _synchro_seedkit_chunk_insert AFTER INSERT ON _synchro_seedkit_row_digests
        WHEN EXISTS (SELECT 1 FROM _synchro_seedkit_digest_chunks WHERE scope_id = NEW.scope_id) BEGIN
            \(markChunk("NEW"))
        END;
        CREATE TRIGGER IF NOT EXISTS _synchro_seedkit_chunk_delete AFTER DELETE ON _synchro_seedkit_row_digests
        WHEN EXISTS (SELECT 1 FROM _synchro_seedkit_digest_chunks WHERE scope_id = OLD.scope_id) BEGIN
            \(markChunk("OLD"))
        END;
        CREATE TRIGGER IF NOT EXISTS _synchro_seedkit_chunk_update AFTER UPDATE ON _synchro_seedkit_row_digests
        WHEN EXISTS (SELECT 1 FROM _synchro_seedkit_digest_chunks WHERE scope_id IN (OLD.scope_id, NEW.scope_id))
        BEGIN
            \(markChunk("OLD"))
            \(markChunk("NEW"))
        END;
        """

    static let chunkObjectNames = [
        chunks, dirtyChunks, "_synchro_seedkit_chunk_insert", "_synchro_seedkit_chunk_delete",
        "_synchro_seedkit_chunk_update",
    ]

    private static func markChunk(_ row: String) -> String {
        """
        INSERT INTO _synchro_seedkit_dirty_chunks (scope_id, lower) SELECT \(row).scope_id, mark FROM (
                SELECT coalesce((SELECT lower FROM _synchro_seedkit_digest_chunks WHERE scope_id = \(row).scope_id
                    AND lower <= \(row).identity ORDER BY lower DESC LIMIT 1), X'') AS mark)
            WHERE NOT EXISTS (SELECT 1 FROM _synchro_seedkit_dirty_chunks WHERE scope_id = \(row).scope_id AND lower = mark);
        """
    }

    /// One range of a scope: `[lower, upper)`, no upper bound when nil.
    struct ChunkRange: Hashable {
        var lower: [UInt8]
        var upper: [UInt8]?
    }

    /// The scope's chunks in order, each with its member count, and the set of dirty lowers.
    static func chunkIndex(
        scope: String, on connection: Connection
    ) throws -> (chunks: [(lower: [UInt8], members: Int64)], dirty: Set<[UInt8]>) {
        let chunks = try connection.cachedStatement(
            "SELECT lower, members FROM _synchro_seedkit_digest_chunks WHERE scope_id = ? ORDER BY lower"
        ).query([.text(scope)]) { ($0.blob(at: 0), $0.int64(at: 1)) }
        let dirty = try connection.cachedStatement("SELECT lower FROM _synchro_seedkit_dirty_chunks WHERE scope_id = ?")
            .query([.text(scope)]) { $0.blob(at: 0) }
        return (chunks, Set(dirty))
    }

    /// Drops `scope`'s chunks and dirty marks (before its entries are rewritten or forgotten).
    static func dropChunks(scope: String, on connection: Connection) throws {
        for sql in [
            "DELETE FROM _synchro_seedkit_digest_chunks WHERE scope_id = ?",
            "DELETE FROM _synchro_seedkit_dirty_chunks WHERE scope_id = ?",
        ] {
            try connection.cachedStatement(sql).run([.text(scope)])
        }
    }

    /// Builds `scope`'s chunks from its entries in one key-order pass (after a complete rewrite of the entries). A
    /// chunk holding a stale entry (a protected row's, stored without a digest) is written dirty: it is read entry by
    /// entry until a verification can pack it.
    static func buildChunks(scope: String, on connection: Connection) throws {
        try dropChunks(scope: scope, on: connection)
        let entries = try connection.cachedStatement(
            "SELECT identity, row_digest FROM _synchro_seedkit_row_digests WHERE scope_id = ? ORDER BY identity")
        try entries.bind([.text(scope)])
        defer { entries.reset() }
        var packer = EntryPacker(scope: scope, lower: [])
        var dirty = false
        let markDirty = try connection.cachedStatement(
            "INSERT OR IGNORE INTO _synchro_seedkit_dirty_chunks (scope_id, lower) VALUES (?, ?)")
        func write() throws {
            if dirty, let lower = packer.chunkLower { try markDirty.run([.text(scope), .blob(lower)]) }
            try packer.write(on: connection)
            dirty = false
        }
        while try entries.step() {
            let digest = entries.unsafeBlobBytes(at: 1)
            if entries.storageClass(at: 1) != .blob || digest.count != 32 {
                packer.append(identity: entries.unsafeBlobBytes(at: 0), digest: nil)
                dirty = true
            } else {
                packer.append(identity: entries.unsafeBlobBytes(at: 0), digest: digest)
            }
            if packer.members == targetMembers { try write() }
        }
        try write()
    }

    /// Packs the dirty range starting at `lower` (a chunk's lower, or `X''` for the part below the first chunk) again
    /// from the entries, split or merged with the next chunk; left dirty when an entry in it is stale.
    static func repackChunk(scope: String, from mark: [UInt8], on connection: Connection) throws {
        var lower = mark
        if !lower.isEmpty, try connection.cachedStatement(
            "SELECT 1 FROM _synchro_seedkit_digest_chunks WHERE scope_id = ? AND lower = ?"
        ).scalar([.text(scope), .blob(lower)]) == nil {
            // A mark without its chunk (not one the triggers write): the range holding it is the one packed.
            lower = try connection.cachedStatement("""
                SELECT lower FROM _synchro_seedkit_digest_chunks WHERE scope_id = ? AND lower <= ?
                ORDER BY lower DESC LIMIT 1
                """).scalar([.text(scope), .blob(lower)])?.blobValue ?? []
        }
        let next = try connection.cachedStatement(
            "SELECT lower FROM _synchro_seedkit_digest_chunks WHERE scope_id = ? AND lower > ? ORDER BY lower LIMIT 1")
        var upper = try next.scalar([.text(scope), .blob(lower)])?.blobValue
        guard var entries = try rangeEntries(scope: scope, ChunkRange(lower: lower, upper: upper), on: connection)
        else { return }
        while entries.count < minimumMembers, let bound = upper {
            upper = try next.scalar([.text(scope), .blob(bound)])?.blobValue
            guard let more = try rangeEntries(scope: scope, ChunkRange(lower: lower, upper: upper), on: connection)
            else { return }
            entries = more
        }
        for table in [chunks, dirtyChunks] {
            if let upper {
                try connection.cachedStatement("DELETE FROM \(table) WHERE scope_id = ? AND lower >= ? AND lower < ?")
                    .run([.text(scope), .blob(lower), .blob(upper)])
            } else {
                try connection.cachedStatement("DELETE FROM \(table) WHERE scope_id = ? AND lower >= ?")
                    .run([.text(scope), .blob(lower)])
            }
        }
        let pieces = entries.count <= maximumMembers ? 1 : (entries.count + targetMembers - 1) / targetMembers
        var sizes = (0..<pieces).map { entries.count / pieces + ($0 < entries.count % pieces ? 1 : 0) }[...]
        var packer = EntryPacker(scope: scope, lower: lower)
        for entry in entries {
            entry.identity.withUnsafeBufferPointer { identity in
                entry.digest.withUnsafeBufferPointer { packer.append(identity: identity, digest: $0) }
            }
            if packer.members == sizes.first {
                try packer.write(on: connection)
                sizes.removeFirst()
            }
        }
        try packer.write(on: connection)
    }

    /// The entries of `range` with their digests; nil when one is stale.
    private static func rangeEntries(
        scope: String, _ range: ChunkRange, on connection: Connection
    ) throws -> [(identity: [UInt8], digest: [UInt8])]? {
        let statement = try entryRange(range, on: connection)
        try statement.bind([.text(scope), .blob(range.lower)] + (range.upper.map { [.blob($0)] } ?? []))
        defer { statement.reset() }
        var entries: [(identity: [UInt8], digest: [UInt8])] = []
        while try statement.step() {
            guard statement.storageClass(at: 1) == .blob else { return nil }
            entries.append((statement.blob(at: 0), statement.blob(at: 1)))
        }
        return entries
    }

    /// The statement reading the entries of `range` (bound: scope, lower, and upper when there is one): identity,
    /// row digest, table name, record ID, in identity order.
    static func entryRange(_ range: ChunkRange, on connection: Connection) throws -> Statement {
        if range.upper == nil {
            return try connection.cachedStatement("""
                SELECT identity, row_digest, table_name, record_id FROM _synchro_seedkit_row_digests
                WHERE scope_id = ? AND identity >= ? ORDER BY identity
                """)
        }
        return try connection.cachedStatement("""
            SELECT identity, row_digest, table_name, record_id FROM _synchro_seedkit_row_digests
            WHERE scope_id = ? AND identity >= ? AND identity < ? ORDER BY identity
            """)
    }

    /// Adds one clean chunk's octets: nil (the stored path gives up) when the accumulator refuses a row, the walked
    /// rows differ from the chunk's count, or its first or last identity lies outside its range.
    static func addChunk(
        _ packed: UnsafeBufferPointer<UInt8>, members: Int64, range: ChunkRange,
        to accumulator: inout ScopeDigestAccumulator
    ) -> Bool {
        guard let run = try? accumulator.add(packed: packed), Int64(run.rows) == members else { return false }
        guard let base = packed.baseAddress, let first = run.first, let last = run.last else { return run.rows == 0 }
        let firstIdentity = UnsafeBufferPointer(start: base + first.offset, count: first.count)
        let lastIdentity = UnsafeBufferPointer(start: base + last.offset, count: last.count)
        guard !firstIdentity.lexicographicallyPrecedes(range.lower) else { return false }
        if let upper = range.upper, !lastIdentity.lexicographicallyPrecedes(upper) { return false }
        return true
    }
}

/// Packs entries into one chunk's octets and writes the chunk; the next chunk's lower is its first identity.
private struct EntryPacker {
    let scope: String
    private var lower: [UInt8]?
    private var octets: [UInt8] = []
    private(set) var members = 0

    init(scope: String, lower: [UInt8]) {
        self.scope = scope
        self.lower = lower
    }

    /// The lower of the chunk being packed (nil before its first entry, except the first chunk's).
    var chunkLower: [UInt8]? { lower }

    /// Appends one entry; a stale one (no digest) counts in the range but not in the octets: its chunk is dirty.
    mutating func append(identity: UnsafeBufferPointer<UInt8>, digest: UnsafeBufferPointer<UInt8>?) {
        if lower == nil { lower = Array(identity) }
        if let digest {
            withUnsafeBytes(of: UInt64(identity.count).bigEndian) { octets.append(contentsOf: $0) }
            octets.append(contentsOf: identity)
            octets.append(contentsOf: digest)
        }
        members += 1
    }

    mutating func write(on connection: Connection) throws {
        guard members > 0, let lower else { return }
        try connection.cachedStatement("""
            INSERT INTO _synchro_seedkit_digest_chunks (scope_id, lower, members, octets) VALUES (?, ?, ?, ?)
            """).run([.text(scope), .blob(lower), .integer(Int64(members)), .blob(octets)])
        self.lower = nil
        octets.removeAll(keepingCapacity: true)
        members = 0
    }
}
