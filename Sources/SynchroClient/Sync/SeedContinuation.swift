import SQLiteKit
import SynchroStore
import SynchroProtocol

/// The check of `spec/seed-format.md` §8 ("After installation") that a stored seed continuation receipt failed
/// against local state before a connect. The receipt is then deleted, not sent, and its scope's generation bumped
/// (cursor NULL), so the scope is rebuilt after pending intent is pushed. Cases name the rule and at most a table:
/// never the receipt, a checksum or a row value.
public enum SeedReceiptFailure: Sendable, Equatable, CustomStringConvertible {
    /// The receipt's schema reference is not the installed schema.
    case schemaReference
    /// The stored receipt text is empty.
    case emptyReceipt
    /// The stored cardinality is negative.
    case negativeCardinality
    /// The stored receipt checksum is not a valid checksum object.
    case invalidChecksum
    /// No local scope row exists for the receipt's scope.
    case scopeMissing
    /// The scope already has a cursor (a receipt only continues a scope that was never synced).
    case scopeHasCursor
    /// The scope generation is not 0 (it was invalidated or rebuilt since installation).
    case scopeGeneration
    /// The scope checksum differs from the receipt checksum.
    case scopeChecksum
    /// The scope's local checksum differs from the receipt checksum.
    case localChecksum
    /// The number of provenance edges differs from the receipt cardinality.
    case cardinality
    /// A provenance edge of `table` is not of generation 0.
    case edgeGeneration(table: String)
    /// A provenance edge of `table` does not match its row version (missing version or another digest).
    case edgeVersion(table: String)
    /// The scope digest recomputed from local rows differs from the receipt checksum.
    case scopeDigest

    /// Stable snake_case name of the rule.
    public var rule: String {
        switch self {
        case .schemaReference: "schema_reference"
        case .emptyReceipt: "empty_receipt"
        case .negativeCardinality: "negative_cardinality"
        case .invalidChecksum: "invalid_checksum"
        case .scopeMissing: "scope_missing"
        case .scopeHasCursor: "scope_has_cursor"
        case .scopeGeneration: "scope_generation"
        case .scopeChecksum: "scope_checksum"
        case .localChecksum: "local_checksum"
        case .cardinality: "cardinality"
        case .edgeGeneration: "edge_generation"
        case .edgeVersion: "edge_version"
        case .scopeDigest: "scope_digest"
        }
    }

    public var description: String {
        switch self {
        case .edgeGeneration(let table), .edgeVersion(let table): "\(rule) (table \(table))"
        default: rule
        }
    }
}

/// What became of one seeded scope's continuation receipt at a connect (`spec/integrity.md` §7.5).
public struct SeedReceiptOutcome: Sendable, Equatable {
    /// The disposition of the receipt.
    public enum Disposition: Sendable, Equatable {
        /// The local re-check failed: the receipt was deleted and not sent; the scope is rebuilt.
        case rejectedLocally(SeedReceiptFailure)
        /// The server issued a cursor at the seed boundary: seeded rows and checksums were kept.
        case continued
        /// The server answered `cursor: null` (stale or unverifiable): the scope is rebuilt after push.
        case discarded
        /// The scope is not assigned (`scopes.remove`): seed provenance and unprotected rows were removed.
        case unassigned
    }

    /// The seeded scope.
    public let scopeID: String
    /// What happened to its receipt.
    public let disposition: Disposition

    /// Creates an outcome.
    public init(scopeID: String, disposition: Disposition) {
        self.scopeID = scopeID
        self.disposition = disposition
    }
}

/// One row of `_synchro_seed_receipts` (`spec/client-store.md` §4.9), read exactly as stored.
struct StoredSeedReceipt {
    let scopeID: String
    let receipt: String
    let schemaVersion: Int64
    let schemaHash: String
    let cardinality: Int64
    let checksum: String
}

/// Reads and re-checks stored seed receipts (`spec/seed-format.md` §8).
enum SeedReceiptStore {
    /// Every stored receipt in byte order of its scope ID.
    static func all(on connection: Connection) throws -> [StoredSeedReceipt] {
        try connection.query("""
            SELECT scope_id, receipt, schema_version, schema_hash, cardinality, checksum
            FROM _synchro_seed_receipts ORDER BY scope_id
            """) {
            StoredSeedReceipt(
                scopeID: try $0.text(at: 0), receipt: try $0.text(at: 1), schemaVersion: $0.int64(at: 2),
                schemaHash: try $0.text(at: 3), cardinality: $0.int64(at: 4), checksum: try $0.text(at: 5))
        }
    }

    /// Re-checks every stored receipt in one server-apply transaction: each failing receipt is deleted and its
    /// scope invalidated (generation + 1, cursor NULL). Returns the failures in scope order.
    static func recheck(in store: ClientStore) throws(SyncError) -> [(scopeID: String, failure: SeedReceiptFailure)] {
        let stored = try store.readSyncState { connection in
            try connection.scalar("SELECT count(*) FROM _synchro_seed_receipts")?.integerValue ?? 0
        }
        guard stored > 0 else { return [] }
        return try store.applySync { connection in
            let installed = try installedSchema(on: connection)
            let rows = installed == nil ? nil : try LocalRows(
                connection: connection, manifest: LocalRows.activeManifest(on: connection))
            var failures: [(scopeID: String, failure: SeedReceiptFailure)] = []
            for receipt in try all(on: connection) {
                guard let failure = try failure(of: receipt, installed: installed, rows: rows, on: connection) else {
                    continue
                }
                try connection.run(
                    "DELETE FROM _synchro_seed_receipts WHERE scope_id = ?", [.text(receipt.scopeID)])
                try ScopeStore.invalidate(receipt.scopeID, on: connection)
                failures.append((receipt.scopeID, failure))
            }
            return failures
        }
    }

    private static func installedSchema(on connection: Connection) throws -> SchemaReference? {
        let version = try MetaStore.integer(.schemaVersion, on: connection)
        guard version > 0, let hash = try MetaStore.value(.schemaHash, on: connection) else { return nil }
        return try? SchemaReference(version: version, hash: hash)
    }

    /// The first rule of §8 that `receipt` breaks, in the order the section lists them; nil when it still holds.
    private static func failure(
        of receipt: StoredSeedReceipt, installed: SchemaReference?, rows: LocalRows?, on connection: Connection
    ) throws -> SeedReceiptFailure? {
        guard let installed, let rows, receipt.schemaVersion == installed.version,
            receipt.schemaHash.exactlyEquals(installed.hash)
        else { return .schemaReference }
        guard !receipt.receipt.isEmpty else { return .emptyReceipt }
        guard receipt.cardinality >= 0 else { return .negativeCardinality }
        guard let checksum = parseChecksum(receipt.checksum) else { return .invalidChecksum }
        guard let scope = try connection.rows(
            "SELECT cursor, generation, checksum, local_checksum FROM _synchro_scopes WHERE scope_id = ?",
            [.text(receipt.scopeID)]
        ).first else { return .scopeMissing }
        guard scope[0] == .null else { return .scopeHasCursor }
        guard scope[1].integerValue == 0 else { return .scopeGeneration }
        guard parseChecksum(scope[2].textValue) == checksum else { return .scopeChecksum }
        guard parseChecksum(scope[3].textValue) == checksum else { return .localChecksum }
        if let failure = try edgeFailure(scope: receipt.scopeID, cardinality: receipt.cardinality, on: connection) {
            return failure
        }
        guard try rows.scopeDigest(scope: receipt.scopeID) == checksum else { return .scopeDigest }
        return nil
    }

    /// Edge count against the cardinality, then each edge's generation and its match with the row version. The
    /// edges are streamed, never held (the first sync of a seed of millions of rows): the count is known at the end,
    /// so the first edge failure is remembered and reported only when the count holds.
    private static func edgeFailure(
        scope: String, cardinality: Int64, on connection: Connection
    ) throws -> SeedReceiptFailure? {
        let edges = try connection.prepare("""
            SELECT e.table_name, e.generation, e.checksum, v.row_checksum
            FROM _synchro_scope_rows e
            LEFT JOIN _synchro_row_versions v ON v.table_name = e.table_name AND v.record_id = e.record_id
            WHERE e.scope_id = ?
            """)
        try edges.bind([.text(scope)])
        defer { edges.reset() }
        var count: Int64 = 0
        var first: SeedReceiptFailure?
        while try edges.step() {
            count += 1
            guard first == nil else { continue }
            if edges.int64(at: 1) != 0 {
                first = .edgeGeneration(table: try edges.text(at: 0))
            } else if let version = parseChecksum(edges.isNull(at: 3) ? nil : try edges.text(at: 3)),
                let edge = Hex.decode(try edges.text(at: 2)), version.digest == edge
            {
                continue
            } else {
                first = .edgeVersion(table: try edges.text(at: 0))
            }
        }
        guard count == cardinality else { return .cardinality }
        return first
    }

    /// A stored checksum object (JSON text); nil when absent or invalid. Member order does not matter.
    static func parseChecksum(_ text: String?) -> Checksum? {
        guard let text, let json = try? StrictJSONParser().parse(Array(text.utf8)) else { return nil }
        return try? Checksum(json: json)
    }
}
