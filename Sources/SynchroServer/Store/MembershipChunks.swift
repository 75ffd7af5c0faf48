import SQLiteKit
import SynchroProtocol

/// Each scope's digest input kept as packed chunks in identity order (SQLite stores, layout 6), so that a terminal
/// checksum is the kept cardinality plus SHA-256 over a few hundred stored runs instead of a scan of one `membership`
/// row per member (docs/decisions.md, "Scope digest input kept as packed chunks").
///
/// A chunk row holds the live members of one key range of its scope, `[lower, next chunk's lower)`, as their exact
/// preimage contributions back to back (`u64be(length) || identity || row_digest`, the octets
/// ``ScopeDigestAccumulator/add(packed:)`` hashes in one update). The ranges of a scope's chunks partition
/// `[first lower, ∞)`; identities below the first lower (a gap that exists only while the scope has no chunk at
/// `X''`) are read from `membership`.
///
/// The chunks are a cache of `membership`, never a source: triggers on `membership` mark the chunk whose range
/// holds each inserted, deleted or updated edge dirty (`membership_chunk_dirty`) in the statement that changes the
/// edge, whichever code runs it, and a dirty range is read from `membership` until a writer rewrites it
/// (``refreshDirty(store:)`` at the end of each materializer batch; ``rebuildAll(store:)`` after a statement that
/// rewrote membership wholesale). A clean chunk therefore always holds exactly its range's live members.
enum MembershipChunks {
    /// Members a chunk is built with (about 64 KiB of octets for the demo's identities).
    static let targetMembers = 512
    /// A rewritten range with more members is split into chunks of about ``targetMembers``.
    static let maximumMembers = 1024
    /// A rewritten range with fewer members absorbs the next chunk.
    static let minimumMembers = 128

    /// The layout's tables and the triggers that mark chunks dirty (SQLite only; created after a bulk load's rows, so
    /// the load does not run them per row).
    static let layout = """
        CREATE TABLE IF NOT EXISTS membership_chunks(
            chunk INTEGER PRIMARY KEY,
            scope_id TEXT NOT NULL,
            lower BLOB NOT NULL,
            members INTEGER NOT NULL,
            octets BLOB NOT NULL,
            UNIQUE(scope_id, lower)
        );
        CREATE TABLE IF NOT EXISTS membership_chunk_dirty(
            scope_id TEXT NOT NULL,
            lower BLOB NOT NULL,
            PRIMARY KEY(scope_id, lower)
        ) WITHOUT ROWID;
        CREATE TRIGGER IF NOT EXISTS membership_chunk_insert AFTER INSERT ON membership BEGIN
            \(mark("NEW"))
        END;
        CREATE TRIGGER IF NOT EXISTS membership_chunk_delete AFTER DELETE ON membership BEGIN
            \(mark("OLD"))
        END;
        CREATE TRIGGER IF NOT EXISTS membership_chunk_update AFTER UPDATE ON membership BEGIN
            \(mark("OLD"))
            \(mark("NEW"))
        END;
        """

    /// Marks dirty the chunk whose range holds the edge `row` (`NEW` or `OLD`), or the gap below the first chunk.
    private static func mark(_ row: String) -> String {
        """
        INSERT INTO membership_chunk_dirty (scope_id, lower) SELECT \(row).scope_id, mark FROM (
                SELECT coalesce((SELECT lower FROM membership_chunks WHERE scope_id = \(row).scope_id
                    AND lower <= \(row).identity ORDER BY lower DESC LIMIT 1), X'') AS mark)
            WHERE NOT EXISTS (SELECT 1 FROM membership_chunk_dirty WHERE scope_id = \(row).scope_id AND lower = mark);
        """
    }

    /// Whether `store` keeps chunks (SQLite); a PostgreSQL store digests `membership` directly.
    static func kept(in store: ServerStore) -> Bool { store.db is SQLiteStoreExecutor }

    // MARK: - Writers

    /// Replaces every scope's chunks with chunks built from `membership` in one key-order pass per scope: the bulk
    /// paths (initial load, schema activation, the layout migration). Scopes are taken from the kept counts; a scope
    /// missing there has no chunk and is read from `membership` whole, which is slower, not wrong.
    static func rebuildAll(store: ServerStore) throws {
        guard kept(in: store) else { return }
        try store.db.cachedStatement("DELETE FROM membership_chunks").run([])
        try store.db.cachedStatement("DELETE FROM membership_chunk_dirty").run([])
        let scopes = try store.db.cachedStatement("SELECT scope_id FROM scope_cardinality WHERE live > 0 ORDER BY scope_id")
            .query([]) { try $0.text(at: 0) }
        let members = try store.db.cachedStatement("""
            SELECT identity, row_digest FROM membership WHERE scope_id = ? AND row_digest IS NOT NULL ORDER BY identity
            """)
        for scope in scopes {
            var packer = ChunkPacker(scope: scope, lower: [], store: store)
            try members.forEachOctetPair([.text(scope)]) { identity, digest in
                try packer.append(identity: identity, digest: digest)
                if packer.members == targetMembers { try packer.write() }
            }
            try packer.write()
        }
    }

    /// Rewrites every dirty range from `membership` (in the transaction that dirtied it: the materializer's batch).
    static func refreshDirty(store: ServerStore) throws {
        guard kept(in: store) else { return }
        let marks = try store.db.cachedStatement("SELECT scope_id, lower FROM membership_chunk_dirty ORDER BY scope_id, lower")
            .query([]) { (try $0.text(at: 0), $0.blob(at: 1)) }
        for (scope, lower) in marks {
            // An earlier rewrite of this call may have covered the mark already.
            guard try store.db.cachedStatement("SELECT 1 FROM membership_chunk_dirty WHERE scope_id = ? AND lower = ?")
                .scalar([.text(scope), .blob(lower)]) != nil
            else { continue }
            try rewrite(scope: scope, from: lower, store: store)
        }
    }

    /// Rewrites the range of `scope` starting at `mark` (a chunk's lower, or `X''` for the gap below the first chunk):
    /// drops its chunks and dirty marks and writes its live members again, split or merged with the next chunk.
    private static func rewrite(scope: String, from mark: [UInt8], store: ServerStore) throws {
        var lower = mark
        let exists = try store.db.cachedStatement("SELECT 1 FROM membership_chunks WHERE scope_id = ? AND lower = ?")
            .scalar([.text(scope), .blob(mark)]) != nil
        if !exists && !mark.isEmpty {
            // A mark without its chunk (not written by the triggers): the range holding it is the one rewritten.
            lower = try store.db.cachedStatement("""
                SELECT lower FROM membership_chunks WHERE scope_id = ? AND lower <= ? ORDER BY lower DESC LIMIT 1
                """).scalar([.text(scope), .blob(mark)])?.blobValue ?? []
        }
        let next = try store.db.cachedStatement(
            "SELECT lower FROM membership_chunks WHERE scope_id = ? AND lower > ? ORDER BY lower LIMIT 1")
        var upper = try next.scalar([.text(scope), .blob(lower)])?.blobValue
        var entries = try liveMembers(scope: scope, from: lower, to: upper, store: store)
        while entries.count < minimumMembers, let bound = upper {
            upper = try next.scalar([.text(scope), .blob(bound)])?.blobValue
            entries = try liveMembers(scope: scope, from: lower, to: upper, store: store)
        }
        for table in ["membership_chunks", "membership_chunk_dirty"] {
            if let upper {
                try store.db.cachedStatement("DELETE FROM \(table) WHERE scope_id = ? AND lower >= ? AND lower < ?")
                    .run([.text(scope), .blob(lower), .blob(upper)])
            } else {
                try store.db.cachedStatement("DELETE FROM \(table) WHERE scope_id = ? AND lower >= ?")
                    .run([.text(scope), .blob(lower)])
            }
        }
        // More than the maximum: pieces of about the target size, their sizes differing by one at most.
        let pieces = entries.count <= maximumMembers ? 1 : (entries.count + targetMembers - 1) / targetMembers
        var sizes = (0..<pieces).map { entries.count / pieces + ($0 < entries.count % pieces ? 1 : 0) }[...]
        var packer = ChunkPacker(scope: scope, lower: lower, store: store)
        for entry in entries {
            try packer.append(identity: entry.identity, digest: entry.digest)
            if packer.members == sizes.first {
                try packer.write()
                sizes.removeFirst()
            }
        }
        try packer.write()
    }

    /// The live members of `scope` in `[lower, upper)` (no upper bound when nil), in identity order.
    private static func liveMembers(
        scope: String, from lower: [UInt8], to upper: [UInt8]?, store: ServerStore
    ) throws -> [(identity: [UInt8], digest: [UInt8])] {
        var entries: [(identity: [UInt8], digest: [UInt8])] = []
        try MembershipRange(scope: scope, lower: lower, upper: upper).forEach(store: store) { identity, digest in
            entries.append((Array(identity), Array(digest)))
        }
        return entries
    }

    // MARK: - Reader

    /// Why the chunked pass gave up: the caller digests `membership` directly instead.
    struct Unusable: Error {}

    /// Adds `scope`'s live members to `accumulator` from its chunks (clean ones hashed as stored, dirty ranges and the
    /// gap below the first chunk read from `membership`), in identity order.
    ///
    /// Each clean chunk is checked on top of the accumulator's per-row walk (lengths, strict order across chunks,
    /// the declared count): its walked rows equal its `members`, and its first and last identities lie in its range.
    /// Any failure throws ``Unusable`` before the digest is finalized, so a damaged chunk never yields a checksum.
    static func addMembers(scope: String, to accumulator: inout ScopeDigestAccumulator, store: ServerStore) throws {
        let chunks = try store.db.cachedStatement(
            "SELECT lower, members FROM membership_chunks WHERE scope_id = ? ORDER BY lower"
        ).query([.text(scope)]) { ($0.blob(at: 0), $0.int64(at: 1)) }
        let dirty = Set(try store.db.cachedStatement("SELECT lower FROM membership_chunk_dirty WHERE scope_id = ?")
            .query([.text(scope)]) { $0.blob(at: 0) })
        if chunks.first?.0 != [] {
            try MembershipRange(scope: scope, lower: [], upper: chunks.first?.0).add(to: &accumulator, store: store)
        }
        guard !chunks.isEmpty else { return }
        var index = 0
        let octets = try store.db.cachedStatement(
            "SELECT lower, octets FROM membership_chunks WHERE scope_id = ? ORDER BY lower")
        try octets.forEachOctetPair([.text(scope)]) { lower, packed in
            guard index < chunks.count, chunks[index].0.elementsEqual(lower) else { throw Unusable() }
            let upper = index + 1 < chunks.count ? chunks[index + 1].0 : nil
            defer { index += 1 }
            if dirty.contains(chunks[index].0) {
                try MembershipRange(scope: scope, lower: chunks[index].0, upper: upper).add(to: &accumulator, store: store)
                return
            }
            let run: ScopeDigestAccumulator.PackedRun
            do {
                run = try accumulator.add(packed: packed)
            } catch {
                throw Unusable()
            }
            guard Int64(run.rows) == chunks[index].1, let base = packed.baseAddress else {
                if run.rows == 0 && chunks[index].1 == 0 { return }
                throw Unusable()
            }
            if let first = run.first, let last = run.last {
                let firstIdentity = UnsafeBufferPointer(start: base + first.offset, count: first.count)
                let lastIdentity = UnsafeBufferPointer(start: base + last.offset, count: last.count)
                guard lower.lexicographicallyPrecedes(firstIdentity) || lower.elementsEqual(firstIdentity) else {
                    throw Unusable()
                }
                if let upper, !lastIdentity.lexicographicallyPrecedes(upper) { throw Unusable() }
            }
        }
        guard index == chunks.count else { throw Unusable() }
    }
}

/// One key range of a scope's live members in `membership`.
private struct MembershipRange {
    let scope: String
    let lower: [UInt8]
    let upper: [UInt8]?

    func forEach(
        store: ServerStore, _ body: (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) throws -> Void
    ) throws {
        if let upper {
            try store.db.cachedStatement("""
                SELECT identity, row_digest FROM membership
                WHERE scope_id = ? AND identity >= ? AND identity < ? AND row_digest IS NOT NULL ORDER BY identity
                """).forEachOctetPair([.text(scope), .blob(lower), .blob(upper)], body)
        } else {
            try store.db.cachedStatement("""
                SELECT identity, row_digest FROM membership
                WHERE scope_id = ? AND identity >= ? AND row_digest IS NOT NULL ORDER BY identity
                """).forEachOctetPair([.text(scope), .blob(lower)], body)
        }
    }

    func add(to accumulator: inout ScopeDigestAccumulator, store: ServerStore) throws {
        let empty = UnsafeBufferPointer<UInt8>(start: nil, count: 0)
        try forEach(store: store) { identity, digest in
            do {
                try accumulator.add(identityHead: identity, identityTail: empty, rowDigest: digest)
            } catch {
                throw MembershipChunks.Unusable()
            }
        }
    }
}

/// Packs members into one chunk's octets and writes the chunk; the next chunk's lower is its first identity.
private struct ChunkPacker {
    let scope: String
    let store: ServerStore
    private var lower: [UInt8]?
    private var octets: [UInt8] = []
    private(set) var members = 0

    init(scope: String, lower: [UInt8], store: ServerStore) {
        self.scope = scope
        self.lower = lower
        self.store = store
    }

    mutating func append(identity: some Collection<UInt8>, digest: some Collection<UInt8>) throws {
        guard digest.count == 32 else { throw SyncIntegrityViolation() }
        if lower == nil { lower = Array(identity) }
        withUnsafeBytes(of: UInt64(identity.count).bigEndian) { octets.append(contentsOf: $0) }
        octets.append(contentsOf: identity)
        octets.append(contentsOf: digest)
        members += 1
    }

    /// Writes the packed members as one chunk (nothing when there are none) and starts the next chunk.
    mutating func write() throws {
        guard members > 0, let lower else { return }
        try store.db.cachedStatement("INSERT INTO membership_chunks(scope_id, lower, members, octets) VALUES (?, ?, ?, ?)")
            .run([.text(scope), .blob(lower), .integer(Int64(members)), .blob(octets)])
        self.lower = nil
        octets.removeAll(keepingCapacity: true)
        members = 0
    }
}
