import SQLiteKit
import SynchroProtocol

/// Creates a portable seed export: one consistent snapshot of every declared portable scope at one
/// materialization boundary (`spec/integrity.md` §7.2).
///
/// The export reads only WAL-materialized state (`projection` ∩ `membership`, live rows), like a
/// rebuild stage, and stages the rows by reference exactly as a rebuild session does: one run of
/// `rebuild_rows` per scope in identity order (table, key, version and digest; the body stays in
/// `projection`), under the session number `-export_key` in `rebuild_references`, so that the
/// projection's triggers save a row's body into the stage before any write changes or deletes it
/// (docs/decisions.md, "Seed exports stage by reference"). Pages are then served from the stage
/// alone, so writes, materialization or retention after the manifest call never change an export,
/// and any page can be fetched again with identical content.
enum SeedExportStaging {
    /// Stages a new export with `pageLimit` rows per page and returns it. Call inside one write
    /// transaction: the boundary, the digests and the staged rows are then one snapshot.
    static func stage<Random: RandomNumberGenerator>(
        pageLimit: Int64, now: Int64, state: inout EngineState, random: inout Random
    ) throws -> SeedExport {
        let store = state.store
        try purgeExpired(now: now, store: store)
        let stream = try StreamState.load(from: store)
        var scopes: [SeedExportScope] = []
        for scopeID in state.dataset.portableScopes {
            let entry = try state.scopeDigests.digest(
                scope: scopeID, manifest: state.manifest, generations: stream.generations, store: store)
            scopes.append(SeedExportScope(
                id: scopeID, rowCount: entry.cardinality, digest: entry.digest, firstStaged: nil))
        }
        let unhashed = SeedExport(
            key: 0, exportID: newExportID(using: &random), transactionNonce: newNonce(using: &random),
            manifestHash: "", schemaVersion: state.manifest.schemaVersion, schemaHash: state.manifest.schemaHash,
            registryGeneration: try store.metaInteger("registry_generation"), generations: stream.generations,
            boundary: stream.position, pageLimit: pageLimit, created: now, scopes: scopes)
        let export = try SeedExport.insert(unhashed.hashed(), store: store)
        var staged: [SeedExportScope] = []
        for scope in export.scopes {
            let entry = try stageRows(of: scope, export: export, store: store)
            try export.insertScope(entry, store: store)
            staged.append(entry)
        }
        try store.db.cachedStatement("INSERT INTO rebuild_references(session_id) VALUES (?)")
            .run([.integer(export.stagingSession)])
        return export.withStagedScopes(staged)
    }

    /// How long an export's pages are served after its manifest call: a rebuild session's lifetime. A staged export
    /// costs every later write to one of its rows a saved body (the projection's copy-on-write), so exports cannot
    /// be kept for ever; after this, a page request is refused like any unknown page (``SeedExportPage/resolve``).
    static let lifetime = RebuildSession.lifetime

    /// Drops what exports older than ``lifetime`` staged — their runs in `rebuild_rows` (selected by each scope's
    /// staged range, so the primary key finds them), their copy-on-write reference, and the copied rows of exports
    /// staged before layout 5 — in the manifest call's transaction. Their headers and scope entries stay (a few
    /// rows each), so an expired export's identifier is never reused and its pages stay refused.
    private static func purgeExpired(now: Int64, store: ServerStore) throws {
        let cutoff: [SQLiteValue] = [.integer(now - lifetime)]
        try store.db.cachedStatement("""
            DELETE FROM rebuild_rows WHERE staged IN (
                SELECT r.staged FROM seed_exports AS e JOIN seed_export_scopes AS s ON s.export_key = e.export_key
                    JOIN rebuild_rows AS r ON r.staged >= s.first_staged AND r.staged < s.first_staged + s.row_count
                        AND r.session_id = -e.export_key
                WHERE e.created_us <= ?)
            """).run(cutoff)
        try store.db.cachedStatement("""
            DELETE FROM rebuild_references WHERE session_id IN (SELECT -export_key FROM seed_exports WHERE created_us <= ?)
            """).run(cutoff)
        try store.db.cachedStatement("""
            DELETE FROM seed_export_rows WHERE export_key IN (SELECT export_key FROM seed_exports WHERE created_us <= ?)
            """).run(cutoff)
    }

    /// Stages the scope's live materialized rows by reference as a rebuild session does
    /// (``RebuildSession/stageLiveRows(of:session:store:)``); returns the scope entry with its first staged number.
    private static func stageRows(
        of scope: SeedExportScope, export: SeedExport, store: ServerStore
    ) throws -> SeedExportScope {
        let (first, count) = try RebuildSession.stageLiveRows(
            of: scope.id, session: export.stagingSession, store: store)
        // The digest was computed from the same rows in this transaction; a different count means
        // the materialized state is inconsistent, and no export may be published from it.
        guard count == scope.rowCount else { throw SyncIntegrityViolation() }
        return SeedExportScope(id: scope.id, rowCount: scope.rowCount, digest: scope.digest, firstStaged: first)
    }

    /// A random (version 4) UUID in canonical lowercase form.
    private static func newExportID<Random: RandomNumberGenerator>(using random: inout Random) -> String {
        var octets = (0..<16).map { _ in UInt8.random(in: 0...255, using: &random) }
        octets[6] = octets[6] & 0x0F | 0x40
        octets[8] = octets[8] & 0x3F | 0x80
        let hex = Array(Hex.encode(octets))
        return [0..<8, 8..<12, 12..<16, 16..<20, 20..<32].map { String(hex[$0]) }.joined(separator: "-")
    }

    /// base64url of 32 random octets (`transaction_nonce`).
    private static func newNonce<Random: RandomNumberGenerator>(using random: inout Random) -> String {
        Base64URL.encode((0..<32).map { _ in UInt8.random(in: 0...255, using: &random) })
    }
}

extension SeedExport {
    /// The manifest object of `spec/integrity.md` §7.2 that `export_manifest_hash` covers: no
    /// `export_manifest_hash`, and no `continuation` or `page_token` in the scope entries; every
    /// integer a JSON number.
    func hashedManifest() throws -> JSONValue {
        .object(JSONObject(try manifestMembers(scopeExtras: { _ in [] })))
    }

    /// The complete manifest returned by `POST /operator/seed/manifest`: the hashed members, the
    /// hash, and per scope its continuation receipt and first page token (row ordinal 0).
    func manifest(pageSigner: TokenSigner, receiptSigner: TokenSigner, keyIDs: SeedKeyIDs) throws -> JSONValue {
        var members = try manifestMembers { scope in
            [
                JSONMember("continuation", .string(receiptSigner.issue(
                    try SeedExportTokens.receiptPayload(export: self, scope: scope, keyID: keyIDs.receipt)))),
                JSONMember("page_token", .string(pageSigner.issue(
                    SeedExportTokens.pagePayload(export: self, scope: scope, ordinal: 0, keyID: keyIDs.page)))),
            ]
        }
        members.insert(JSONMember("export_manifest_hash", .string(manifestHash)), at: 1)
        return .object(JSONObject(members))
    }

    /// `hex(SHA-256(ASCII(domain) || 0x00 || RFC8785_UTF8(hashed manifest)))` (shared with the exporter).
    static func manifestHash(of hashedManifest: JSONValue) throws -> String {
        let hash = SeedExportManifest.computeHash(hashedManifest)
        guard !hash.isEmpty else { throw SyncIntegrityViolation() }
        return hash
    }

    /// This export with its `export_manifest_hash` computed.
    fileprivate func hashed() throws -> SeedExport {
        SeedExport(
            key: key, exportID: exportID, transactionNonce: transactionNonce,
            manifestHash: try Self.manifestHash(of: try hashedManifest()), schemaVersion: schemaVersion,
            schemaHash: schemaHash, registryGeneration: registryGeneration, generations: generations,
            boundary: boundary, pageLimit: pageLimit, created: created, scopes: scopes)
    }

    private func manifestMembers(scopeExtras: (SeedExportScope) throws -> [JSONMember]) throws -> [JSONMember] {
        let entries = try scopes.map { scope -> JSONValue in
            .object(JSONObject([
                JSONMember("id", .string(scope.id)),
                JSONMember("registry_generation", .number(JSONNumber(registryGeneration))),
                JSONMember("membership_generation", .number(JSONNumber(generations.membership))),
                JSONMember("retention_generation", .number(JSONNumber(generations.retention))),
                JSONMember("cardinality", .number(JSONNumber(scope.rowCount))),
                JSONMember("checksum", try scope.checksum()),
            ] + (try scopeExtras(scope))))
        }
        return [
            JSONMember("export_id", .string(exportID)),
            JSONMember("schema_version", .number(JSONNumber(schemaVersion))),
            JSONMember("schema_hash", .string(schemaHash)),
            JSONMember("stream_generation", .number(JSONNumber(generations.stream))),
            JSONMember("snapshot_boundary", snapshotBoundary.json),
            JSONMember("page_limit", .number(JSONNumber(pageLimit))),
            JSONMember("portable_scopes", .array(entries)),
        ]
    }
}
