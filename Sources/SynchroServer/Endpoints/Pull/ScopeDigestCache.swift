import SQLiteKit
import SynchroProtocol

/// Scope digests at the current boundary, kept per scope until that scope's stream advances.
///
/// A scope digest covers every live row of the scope (`projection` ∩ `membership`), streamed in
/// ascending identity order (`spec/wire-protocol.md` §2.10.3). Recomputing it for every terminal
/// page would make a steady pull of a large scope cost a full scan; but the digest changes only
/// when the materializer appends a stream entry for the scope, so the scope's last stream position
/// (with the schema hash and lineage generations) is an exact cache key.
struct ScopeDigestCache {
    /// A digest and everything it depends on.
    struct Entry {
        let schemaHash: String
        let generations: StreamGenerations
        /// The scope's greatest stream position when the digest was computed (0: none yet).
        let lastPosition: Int64
        let cardinality: Int64
        let digest: [UInt8]
    }

    private var entries: [ExactKey: Entry] = [:]

    /// The digest of `scope` as the store holds it now. Call inside the transaction that fixes the
    /// page or snapshot boundary so that digest and boundary agree.
    ///
    /// - Parameter knownCardinality: the scope's live row count when the caller has just counted
    ///   it in the same transaction (rebuild staging copies exactly those rows); the digest then
    ///   skips counting again. A digest over a different number of rows is an integrity failure.
    mutating func digest(
        scope: String, manifest: SchemaManifest, generations: StreamGenerations, store: ServerStore,
        knownCardinality: Int64? = nil
    ) throws -> Entry {
        let lastPosition = try store.db.cachedStatement("SELECT max(position) FROM stream WHERE scope_id = ?")
            .scalar([.text(scope)])?.integerValue ?? 0
        let key = ExactKey(scope)
        if let cached = entries[key], cached.lastPosition == lastPosition, cached.generations == generations,
           cached.schemaHash.exactlyEquals(manifest.schemaHash) {
            return cached
        }
        let (cardinality, digest) = try Self.compute(
            scope: scope, schemaHash: manifest.schemaHashOctets, store: store, knownCardinality: knownCardinality)
        let entry = Entry(
            schemaHash: manifest.schemaHash, generations: generations, lastPosition: lastPosition,
            cardinality: cardinality, digest: digest)
        entries[key] = entry
        return entry
    }

    /// One streaming SHA-256 over the scope's live rows in identity order: membership's key order is `memcmp` of
    /// the identity, which is the protocol's order, and each live member carries its row digest
    /// (``ServerSchema``), so the pass reads one key range and hashes stored octets in place, whatever changed. The
    /// cardinality the preimage starts with is the kept count (``ScopeCardinality``), not a second pass.
    ///
    /// What the pass checks and what it trusts: the accumulator refuses a row out of order or repeated, a digest
    /// that is not 32 octets and a row count that differs from the declared one — a wrong kept count is an
    /// integrity failure here, never a wrong checksum. It does not re-check each identity's structure: every
    /// identity in `membership` was written by this server from its own encoding of a validated key (the initial
    /// load, and the materializer, which refuses a captured identity that differs from the one it re-encodes), so
    /// the check could only fail on a store altered behind the server, whose effect on the checksum a client
    /// recomputing from its rows detects (`spec/integrity.md` §4.7, terminal rule 4).
    static func compute(
        scope: String, schemaHash: [UInt8], store: ServerStore, knownCardinality: Int64? = nil
    ) throws -> (Int64, [UInt8]) {
        let count = try knownCardinality ?? ScopeCardinality.live(scope: scope, store: store)
        guard count >= 0 else { throw SyncIntegrityViolation() }
        if MembershipChunks.kept(in: store) {
            var accumulator = try ScopeDigestAccumulator(
                schemaHash: schemaHash, scopeID: scope, cardinality: UInt64(count))
            do {
                try MembershipChunks.addMembers(scope: scope, to: &accumulator, store: store)
                return (count, try accumulator.finalize())
            } catch is MembershipChunks.Unusable, is ScopeDigestError {
                // A chunk that does not add up (or a wrong kept count): the pass below decides from membership alone.
            }
        }
        return try fullPass(scope: scope, schemaHash: schemaHash, count: count, store: store)
    }

    /// The pass over `membership`'s key range of the scope, one row at a time: PostgreSQL stores, and a SQLite store
    /// whose chunks did not add up.
    static func fullPass(scope: String, schemaHash: [UInt8], count: Int64, store: ServerStore) throws -> (Int64, [UInt8]) {
        var accumulator = try ScopeDigestAccumulator(
            schemaHash: schemaHash, scopeID: scope, cardinality: UInt64(count))
        let rows = try store.db.cachedStatement("""
            SELECT identity, row_digest FROM membership WHERE scope_id = ? AND row_digest IS NOT NULL
            ORDER BY identity
            """)
        let empty = UnsafeBufferPointer<UInt8>(start: nil, count: 0)
        try rows.forEachOctetPair([.text(scope)]) { identity, digest in
            do {
                try accumulator.add(identityHead: identity, identityTail: empty, rowDigest: digest)
            } catch {
                throw SyncIntegrityViolation()
            }
        }
        do {
            return (count, try accumulator.finalize())
        } catch {
            throw SyncIntegrityViolation()
        }
    }
}

/// A dictionary key comparing protocol identifiers (scope IDs, table IDs) by their exact octets:
/// Swift's `==` would merge canonically equivalent IDs, which the protocol keeps distinct.
struct ExactKey: Hashable {
    let id: String

    init(_ id: String) {
        self.id = id
    }

    static func == (lhs: ExactKey, rhs: ExactKey) -> Bool { lhs.id.exactlyEquals(rhs.id) }

    func hash(into hasher: inout Hasher) {
        for octet in id.utf8 { hasher.combine(octet) }
    }
}

/// Durable or staged state breaks an integrity rule (a missing digest, an identity out of order):
/// 500 `sync_integrity_failure`, never partial progress (`spec/wire-protocol.md` §5.7).
struct SyncIntegrityViolation: Error {}

extension WireError {
    /// The wire form of any failure inside an endpoint: protocol errors as thrown, integrity
    /// violations as 500, everything else (a failed or rolled-back transaction) as a retryable 503.
    static func from(_ error: any Error) -> WireError {
        if let wire = error as? WireError { return wire }
        if error is SyncIntegrityViolation { return WireError(.syncIntegrityFailure, "sync operation failed") }
        return WireError(.temporaryUnavailable, "operation failed")
    }
}
