import SQLiteKit
import SynchroStore
import SynchroProtocol

/// The durable record of one rebuild attempt (`_synchro_rebuild_attempts`).
public struct RebuildAttempt: Sendable, Equatable {
    /// The scope being rebuilt.
    public let scopeID: String
    /// The attempt's rebuild ID, reused for every page and retry.
    public let rebuildID: String
    /// The bound client generation.
    public let clientGeneration: Int64
    /// The target schema version.
    public let schemaVersion: Int64
    /// The target schema hash.
    public let schemaHash: String
    /// The scope generation the attempt's provenance carries.
    public let generation: Int64
    /// The exact token of the next request; nil for the first page.
    public let cursor: String?
    /// The page limit fixed for the attempt.
    public let pageLimit: Int64

    /// The attempt once a page that continues at `cursor` committed.
    func advanced(to cursor: String) -> RebuildAttempt {
        RebuildAttempt(
            scopeID: scopeID, rebuildID: rebuildID, clientGeneration: clientGeneration, schemaVersion: schemaVersion,
            schemaHash: schemaHash, generation: generation, cursor: cursor, pageLimit: pageLimit)
    }
}

/// Rebuilds one scope page by page (`spec/wire-protocol.md` §6.4, `spec/client-store.md` §9): a durable
/// attempt before the first request, one transaction per page, and finality in the final page's transaction.
public struct RebuildApplier: Sendable {
    /// Where and as whom to rebuild.
    public let context: SyncContext

    /// Creates an applier.
    public init(context: SyncContext) {
        self.context = context
    }

    /// The stored attempt of `scope`, if any.
    public func attempt(scope: String) throws(SyncError) -> RebuildAttempt? {
        try context.store.readSyncState { connection in try Self.attempt(scope: scope, on: connection) }
    }

    /// Starts (or reuses) the attempt of `scope` in one transaction, before any request: a new attempt resets
    /// only this scope's provenance, bumps its generation and persists a new rebuild ID with a null cursor.
    @discardableResult
    public func start(scope: String) throws(SyncError) -> RebuildAttempt {
        let store = context.store
        let uuids = store.configuration.uuids
        let limit = context.pageLimit
        // Writes rebuild state and scope state, and provenance and rows through LocalRows only.
        let attempt = try store.applySyncKeepingScopeDigests { connection in
            let binding = try ScopeStore.binding(on: connection)
            guard let local = try ScopeStore.all(on: connection).first(where: { $0.scopeID == scope }) else {
                throw SyncError.invalidState(reason: "the scope is not assigned")
            }
            if let existing = try Self.attempt(scope: scope, on: connection),
                existing.clientGeneration == binding.generation, existing.schemaVersion == binding.schema.version,
                existing.schemaHash == binding.schema.hash, existing.pageLimit == limit,
                existing.generation == local.generation
            {
                return existing
            }
            let rows = LocalRows(connection: connection, manifest: try store.activeManifest(on: connection))
            // A new attempt writes over rows an earlier one left: it starts with every index in place.
            try RebuildIndexDeferral.restore(on: connection)
            try connection.run("DELETE FROM _synchro_rebuild_page_receipts WHERE scope_id = ?", [.text(scope)])
            try connection.run("DELETE FROM _synchro_rebuild_attempts WHERE scope_id = ?", [.text(scope)])
            try rows.dropEdges(scope: scope)
            try ScopeStore.invalidate(scope, on: connection)
            let attempt = RebuildAttempt(
                scopeID: scope, rebuildID: uuids.next(), clientGeneration: binding.generation,
                schemaVersion: binding.schema.version, schemaHash: binding.schema.hash,
                generation: local.generation + 1, cursor: nil, pageLimit: limit)
            try connection.run("""
                INSERT INTO _synchro_rebuild_attempts
                    (scope_id, rebuild_id, client_generation, schema_version, schema_hash, generation, cursor,
                     page_limit)
                VALUES (?, ?, ?, ?, ?, ?, NULL, ?)
                """, [
                    .text(scope), .text(attempt.rebuildID), .integer(attempt.clientGeneration),
                    .integer(attempt.schemaVersion), .text(attempt.schemaHash), .integer(attempt.generation),
                    .integer(limit),
                ])
            return attempt
        }
        SyncCrashPoint.rebuildStarted.reached()
        return attempt
    }

    /// The exact request the stored attempt makes next.
    public func request(for attempt: RebuildAttempt) throws(SyncError) -> RebuildRequest {
        try Self.request(for: attempt, clientID: context.boundClientID())
    }

    static func request(for attempt: RebuildAttempt, clientID: String) throws(SyncError) -> RebuildRequest {
        let schema: SchemaReference
        do {
            schema = try SchemaReference(version: attempt.schemaVersion, hash: attempt.schemaHash)
        } catch {
            throw .invalidState(reason: "the attempt's schema reference is malformed")
        }
        return RebuildRequest(
            clientID: clientID, clientGeneration: attempt.clientGeneration, schema: schema,
            scope: attempt.scopeID, rebuildID: attempt.rebuildID, cursor: attempt.cursor, limit: attempt.pageLimit)
    }

    /// The exact body of the next request of `attempt` (the work identity of a `rebuilding` retry).
    static func requestJSON(for attempt: RebuildAttempt, clientID: String) throws -> String {
        try CanonicalJSON.string(try request(for: attempt, clientID: clientID).json)
    }

    /// Sends the attempt's next request and applies the page; returns true once the final page verified.
    /// Throws ``SyncError/rebuildChecksumMismatch(scope:)`` after discarding the attempt when finality fails.
    @discardableResult
    public func runPage(scope: String) throws(SyncError) -> Bool {
        try runPage(scope: scope, ahead: nil).isFinal
    }

    /// A page received and verified, with the schema it was verified against.
    struct ReceivedPage: Sendable {
        let page: RebuildPage.Outline
        /// The page's records in the forms the store keeps. The parsed rows they were converted from are released
        /// where the page was verified: on the thread that received a page ahead, not on the engine's.
        let records: [LocalRows.StoredRecord]
        let bytes: [UInt8]
        /// `bytes` as the text its receipt stores, decoded where the page was verified.
        let text: String
        let schema: SchemaReference
    }

    /// ``runPage(scope:)`` that takes the reply from `ahead` when the next request was sent ahead, and sends the
    /// request after an intermediate page ahead before applying it. Returns whether the page was final and how
    /// many records it carried.
    func runPage(
        scope: String, ahead: RequestAhead<ReceivedPage>?, check: RebuildRowCheck? = nil
    ) throws(SyncError) -> (isFinal: Bool, rows: Int) {
        guard let attempt = try attempt(scope: scope) else { throw .invalidState(reason: "no rebuild attempt") }
        let clientID = try context.boundClientID()
        let body = try Self.body(for: attempt, clientID: clientID)
        let manifest = try store.readSyncState { connection in try store.activeManifest(on: connection) }
        let received: ReceivedPage
        if let early = ahead?.take(body) {
            received = try early.get()
        } else {
            received = try Self.receive(body, scope: scope, manifest: manifest, transport: context.transport)
        }
        SyncCrashPoint.rebuildReceived.reached()
        if let ahead, let next = received.page.cursor {
            // The request this page leads to, exactly as the stored attempt will make it once the page commits.
            let nextBody = try Self.body(for: attempt.advanced(to: next), clientID: clientID)
            let transport = context.transport
            ahead.send(nextBody) { () throws(SyncError) in
                try Self.receive(nextBody, scope: scope, manifest: manifest, transport: transport)
            }
        }
        let page: ReceivedPage
        if received.schema == manifest.reference {
            page = received
        } else {
            page = try Self.verify(received.bytes, scope: scope, manifest: manifest)
        }
        check?.willWrite(page.records.map { (tableName: $0.tableName, recordID: $0.recordID) })
        let isFinal = try apply(
            page: page.page, records: page.records, manifest: manifest, responseJSON: page.text,
            requestBytes: body, attempt: attempt, check: check)
        if !isFinal { check?.committed() }
        return (isFinal, page.records.count)
    }

    /// A check of the rows this rebuild of `scope` writes from now on (``RebuildRowCheck``), for finality.
    func rowCheck(scope: String) throws(SyncError) -> RebuildRowCheck {
        let (manifest, dataVersion) = try store.readSyncState { connection in
            (try store.activeManifest(on: connection),
             try connection.scalar("PRAGMA data_version")?.integerValue ?? -1)
        }
        return RebuildRowCheck(
            path: store.configuration.path, scope: scope, manifest: manifest, dataVersion: dataVersion)
    }

    private var store: ClientStore { context.store }

    /// The exact request body of `attempt`.
    private static func body(for attempt: RebuildAttempt, clientID: String) throws(SyncError) -> [UInt8] {
        try SyncExchange.mapping { try CanonicalJSON.encode(try request(for: attempt, clientID: clientID).json) }
    }

    /// Sends `body` and verifies the page against `manifest`.
    private static func receive(
        _ body: [UInt8], scope: String, manifest: ClientManifest, transport: any SyncTransport
    ) throws(SyncError) -> ReceivedPage {
        let (json, bytes) = try SyncExchange.post(transport, path: "/sync/rebuild", body: body)
        return try verify(json: json, bytes: bytes, scope: scope, manifest: manifest)
    }

    /// Verifies a received page against `manifest` and prepares its records for storage.
    private static func verify(
        json: JSONValue, bytes: [UInt8], scope: String, manifest: ClientManifest
    ) throws(SyncError) -> ReceivedPage {
        let page = try RebuildPage(json: json, scope: scope, manifest: manifest.manifest)
        let records = try SyncExchange.mapping { try LocalRows.storedRecords(page.records, manifest: manifest) }
        return ReceivedPage(
            page: page.outline, records: records, bytes: bytes, text: String(decoding: bytes, as: UTF8.self),
            schema: manifest.reference)
    }

    private static func verify(
        _ bytes: [UInt8], scope: String, manifest: ClientManifest
    ) throws(SyncError) -> ReceivedPage {
        try verify(json: try parse(bytes), bytes: bytes, scope: scope, manifest: manifest)
    }

    private static func parse(_ bytes: [UInt8]) throws(SyncError) -> JSONValue {
        do {
            return try ResponseBudget.page.parser.parse(bytes)
        } catch where error.rule == .valueLimitExceeded {
            throw .contract(rule: "response_too_many_values", member: "")
        } catch {
            throw .contract(rule: "malformed_json", member: "")
        }
    }

    /// Applies a 200 body received for `requestBody`, the exact request `attempt` made (a replayed or
    /// re-received page): a page whose identity already has a receipt is checked byte for byte and not applied
    /// again. Returns true once the final page verified.
    @discardableResult
    public func apply(
        responseBody: [UInt8], requestBody: [UInt8], attempt: RebuildAttempt
    ) throws(SyncError) -> Bool {
        let expected = try SyncExchange.mapping { try CanonicalJSON.encode(try request(for: attempt).json) }
        guard expected == requestBody else { throw .invalidState(reason: "the request is not the attempt's") }
        return try apply(
            json: try Self.parse(responseBody), responseBytes: responseBody, requestBytes: requestBody,
            attempt: attempt)
    }

    /// Starts or resumes the attempt of `scope` and runs pages until the final one verifies.
    public func rebuild(scope: String) throws(SyncError) {
        try start(scope: scope)
        while try !runPage(scope: scope) {}
    }

    /// Validates and applies one page body received for `attempt`'s current request.
    func apply(
        json: JSONValue, responseBytes: [UInt8], requestBytes: [UInt8], attempt: RebuildAttempt
    ) throws(SyncError) -> Bool {
        let manifest = try store.readSyncState { connection in try store.activeManifest(on: connection) }
        let received = try Self.verify(json: json, bytes: responseBytes, scope: attempt.scopeID, manifest: manifest)
        return try apply(
            page: received.page, records: received.records, manifest: manifest, responseJSON: received.text,
            requestBytes: requestBytes, attempt: attempt)
    }

    /// Applies one page verified against `manifest` (the active one), received for `attempt`'s current request.
    private func apply(
        page: RebuildPage.Outline, records: [LocalRows.StoredRecord], manifest: ClientManifest, responseJSON: String,
        requestBytes: [UInt8], attempt: RebuildAttempt, check: RebuildRowCheck? = nil
    ) throws(SyncError) -> Bool {
        let scope = attempt.scopeID
        guard manifest.reference.version == attempt.schemaVersion, manifest.reference.hash == attempt.schemaHash else {
            throw .invalidState(reason: "the attempt targets another schema")
        }
        let requestJSON = String(decoding: requestBytes, as: UTF8.self)
        let outcome: PageOutcome
        do {
            outcome = try applyPage(
                page: page, records: records, manifest: manifest, responseJSON: responseJSON, requestJSON: requestJSON,
                attempt: attempt, check: check)
        } catch {
            // A final page that does not verify commits nothing (its rows, edges and receipt roll back with it);
            // the attempt is then discarded in its own transaction. A crash in between leaves the attempt at the
            // request before the final page, which the next run sends again and judges the same way: no state
            // ever holds a final receipt without finality (client contract, rebuild finality).
            if case .rebuildChecksumMismatch = error { try discardAttempt(scope: scope) }
            throw error
        }
        switch outcome {
        case .intermediate:
            SyncCrashPoint.rebuildPage.reached()
            return false
        case .final:
            SyncCrashPoint.rebuildFinal.reached()
            return true
        }
    }

    /// One page transaction of ``apply(page:records:manifest:responseJSON:requestBytes:attempt:check:)``; throws
    /// ``SyncError/rebuildChecksumMismatch(scope:)`` (rolling everything back) when a final page does not verify.
    private func applyPage(
        page: RebuildPage.Outline, records: [LocalRows.StoredRecord], manifest: ClientManifest, responseJSON: String,
        requestJSON: String, attempt: RebuildAttempt, check: RebuildRowCheck?
    ) throws(SyncError) -> PageOutcome {
        let scope = attempt.scopeID
        return try context.store.applySyncKeepingScopeDigests { connection -> PageOutcome in
            // The page's request is answered (applied now or before): a retry of it is done.
            try BackoffStore.clear(.rebuilding, workIdentity: requestJSON, on: connection)
            let identity: [SQLiteValue] = [
                .text(scope), .text(attempt.rebuildID), .integer(attempt.cursor == nil ? 1 : 0),
                .text(attempt.cursor ?? ""),
            ]
            if let stored = try connection.rows("""
                SELECT request_json, response_json, is_final FROM _synchro_rebuild_page_receipts
                WHERE scope_id = ? AND rebuild_id = ? AND request_cursor_is_null = ? AND request_cursor = ?
                """, identity).first
            {
                // A known page identity: identical content is a no-op, anything else an integrity failure.
                guard stored[0].textValue == requestJSON, stored[1].textValue == responseJSON else {
                    throw SyncError.rebuildPageConflict(scope: scope)
                }
                return stored[2].integerValue == 1 ? .final : .intermediate
            }
            guard try Self.attempt(scope: scope, on: connection) == attempt else {
                throw SyncError.invalidState(reason: "the rebuild attempt changed")
            }
            // The first page of an attempt on a fresh store drops the non-unique indexes of its empty tables, in
            // this transaction, to build them once at finality (RebuildIndexDeferral).
            if attempt.cursor == nil { try RebuildIndexDeferral.deferIfFresh(manifest: manifest, on: connection) }
            let rows = LocalRows(connection: connection, manifest: manifest)
            let protected = try rows.protectedRows(tableNames: Set(records.map(\.tableName)))
            try rows.writeRebuildPage(
                records, scope: scope, generation: attempt.generation, protected: protected,
                pageLimit: Int(clamping: attempt.pageLimit))
            let finalChecksum = try page.checksum.map { try CanonicalJSON.string($0.json) }
            try connection.run("""
                INSERT INTO _synchro_rebuild_page_receipts (scope_id, rebuild_id, request_cursor_is_null,
                    request_cursor, request_json, response_json, is_final, final_scope_cursor, final_checksum)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                """, identity + [
                    .text(requestJSON), .text(responseJSON), .integer(page.isFinal ? 1 : 0),
                    page.finalScopeCursor.map(SQLiteValue.text) ?? .null,
                    finalChecksum.map(SQLiteValue.text) ?? .null,
                ])
            guard page.isFinal, let checksum = page.checksum, let finalCursor = page.finalScopeCursor,
                let finalChecksum
            else {
                try connection.run(
                    "UPDATE _synchro_rebuild_attempts SET cursor = ? WHERE scope_id = ?",
                    [page.cursor.map(SQLiteValue.text) ?? .null, .text(scope)])
                return .intermediate
            }
            // Finality in the same transaction: stale provenance pruned, orphans deleted, digest verified.
            try rows.dropEdges(scope: scope, keepingGeneration: attempt.generation)
            // The deferred indexes are built before the digest, in this transaction: no committed state has the
            // scope verified without them, and the digest is remembered under the schema that includes them. Under
            // the default page cache, as the digest: `CREATE INDEX` sorts the table, and the sorter keeps up to the
            // cache's size in memory (12 MB more at 300,000 rows under the bulk cache) before it spills to a file.
            _ = try Self.withSmallCache(on: connection) { try RebuildIndexDeferral.restore(on: connection) }
            let local = try Self.withSmallCache(on: connection) { try rows.scopeDigest(scope: scope, check: check) }
            guard local == checksum else { throw SyncError.rebuildChecksumMismatch(scope: scope) }
            try connection.run("""
                UPDATE _synchro_scopes SET cursor = ?, checksum = ?, local_checksum = ? WHERE scope_id = ?
                """, [.text(finalCursor), .text(finalChecksum), .text(finalChecksum), .text(scope)])
            try connection.run("DELETE FROM _synchro_rebuild_attempts WHERE scope_id = ?", [.text(scope)])
            return .final
        }
    }

    private enum PageOutcome: Sendable { case intermediate, final }

    /// Runs `body` with SQLite's default page cache (2 MiB) instead of a bulk apply's. The scope digest sorts the
    /// scope's edges in row-identity order, and SQLite's sorter keeps as many bytes in memory as the page cache may
    /// hold before it spills to a temporary file: under the bulk cache that sort added up to 32 MiB more at
    /// finality, growing with the scope until the cap (docs/performance.md, tenth session).
    private static func withSmallCache<Value>(on connection: Connection, _ body: () throws -> Value) throws -> Value {
        let cache = try connection.scalar("PRAGMA cache_size")?.integerValue
        try connection.execute("PRAGMA cache_size = -2000")
        defer { if let cache { _ = try? connection.execute("PRAGMA cache_size = \(cache)") } }
        return try body()
    }

    private func discardAttempt(scope: String) throws(SyncError) {
        try context.store.applySync { connection in
            try connection.run("DELETE FROM _synchro_rebuild_page_receipts WHERE scope_id = ?", [.text(scope)])
            try connection.run("DELETE FROM _synchro_rebuild_attempts WHERE scope_id = ?", [.text(scope)])
            try RebuildIndexDeferral.restore(on: connection)
        }
    }

    static func attempt(scope: String, on connection: Connection) throws -> RebuildAttempt? {
        try attempts(where: "WHERE scope_id = ?", [.text(scope)], on: connection).first
    }

    /// Every stored attempt, in scope order.
    static func attempts(on connection: Connection) throws -> [RebuildAttempt] {
        try attempts(where: "ORDER BY scope_id", [], on: connection)
    }

    private static func attempts(
        where clause: String, _ arguments: [SQLiteValue], on connection: Connection
    ) throws -> [RebuildAttempt] {
        try connection.query("""
            SELECT scope_id, rebuild_id, client_generation, schema_version, schema_hash, generation, cursor,
                page_limit
            FROM _synchro_rebuild_attempts \(clause)
            """, arguments
        ) {
            RebuildAttempt(
                scopeID: try $0.text(at: 0), rebuildID: try $0.text(at: 1), clientGeneration: $0.int64(at: 2),
                schemaVersion: $0.int64(at: 3), schemaHash: try $0.text(at: 4), generation: $0.int64(at: 5),
                cursor: $0.isNull(at: 6) ? nil : try $0.text(at: 6), pageLimit: $0.int64(at: 7))
        }
    }
}
