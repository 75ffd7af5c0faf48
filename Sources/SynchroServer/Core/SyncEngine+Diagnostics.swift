import SQLiteKit
import SynchroProtocol

/// Read-only views of the durable state, for tests that prove a rejected request changed nothing
/// (ARCHITECTURE.md: "bad input gets a typed error … and nothing durable changes").
extension SyncEngine {
    /// One SHA-256 per table of the server database (every table, in name order), over every row
    /// in the table's key order with each value's storage class, length and octets.
    ///
    /// Two equal fingerprints mean equal durable state; a difference names the tables that
    /// changed. The digests say nothing about row values, so they are safe to print.
    func stateFingerprint() throws -> [String: String] {
        try state.withLock { state in
            let db = state.store.db
            let tables = try db.tableNames()
            var fingerprint: [String: String] = [:]
            for table in tables {
                // Names come from the database's catalog; the schema has none that needs escaping.
                guard !table.contains("\"") else { throw SyncIntegrityViolation() }
                var hasher = SHA256()
                try db.cachedStatement("SELECT * FROM \"\(table)\"").forEachRow([]) { row in
                    for column in 0..<row.columnCount {
                        Self.hash(try row.value(at: column), into: &hasher)
                    }
                }
                fingerprint[table] = Hex.encode(hasher.finalize())
            }
            return fingerprint
        }
    }

    /// Runs one SQL statement on the store under the engine's lock: tests reach durable state the
    /// protocol cannot (to corrupt a stored digest, for example) without a second connection.
    /// Returns the number of rows it changed.
    @discardableResult
    func executeForTesting(_ sql: String, _ arguments: [SQLiteValue] = []) throws -> Int {
        try state.withLock { state in
            try state.store.db.cachedStatement(sql).run(arguments)
            return state.store.db.changes
        }
    }

    /// The rows of one query on the store under the engine's lock (tests compare durable state on either store).
    func rowsForTesting(_ sql: String, _ arguments: [SQLiteValue] = []) throws -> [[SQLiteValue]] {
        try state.withLock { state in try state.store.db.cachedStatement(sql).rows(arguments) }
    }

    /// The scope digest of `scope` as its terminal checksum would be computed now, two ways: from the kept chunks
    /// (nil when they do not add up and the pass would fall back, or the store keeps none) and from `membership` alone.
    func scopeDigestPassesForTesting(scope: String) throws -> (chunks: [UInt8]?, membership: [UInt8]) {
        try state.withLock { state in
            let schemaHash = state.manifest.schemaHashOctets
            let count = try ScopeCardinality.live(scope: scope, store: state.store)
            let full = try ScopeDigestCache.fullPass(scope: scope, schemaHash: schemaHash, count: count, store: state.store)
            guard MembershipChunks.kept(in: state.store) else { return (nil, full.1) }
            var accumulator = try ScopeDigestAccumulator(
                schemaHash: schemaHash, scopeID: scope, cardinality: UInt64(count))
            do {
                try MembershipChunks.addMembers(scope: scope, to: &accumulator, store: state.store)
                return (try accumulator.finalize(), full.1)
            } catch is MembershipChunks.Unusable, is ScopeDigestError {
                return (nil, full.1)
            }
        }
    }

    /// Storage class, length and octets of one value, so that no two different rows hash alike.
    private static func hash(_ value: SQLiteValue, into hasher: inout SHA256) {
        let (tag, octets): (UInt8, [UInt8])
        switch value {
        case .null: (tag, octets) = (0, [])
        case .integer(let number): (tag, octets) = (1, withUnsafeBytes(of: number.bigEndian) { Array($0) })
        case .real(let number): (tag, octets) = (2, withUnsafeBytes(of: number.bitPattern.bigEndian) { Array($0) })
        case .text(let text): (tag, octets) = (3, Array(text.utf8))
        case .blob(let bytes): (tag, octets) = (4, bytes)
        }
        var header = [tag]
        withUnsafeBytes(of: UInt64(octets.count).bigEndian) { header.append(contentsOf: $0) }
        hasher.update(header)
        hasher.update(octets)
    }
}
