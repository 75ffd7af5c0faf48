import SQLiteKit
import SynchroProtocol

/// One page of one scope of an export (`spec/integrity.md` §7.2, `spec/seed-format.md` §3):
/// `{scope, records: [{table, pk, row_checksum, server_version, row}], page_token, has_more}`,
/// read from the export's staged rows only.
struct SeedExportPage {
    /// `POST /operator/seed/scope` body members.
    struct Request {
        let scopeID: String
        let pageToken: String
        let receipt: String
        let expectedRowOrdinal: Int64
        let limit: Int64

        /// Reads the exact request object.
        init(json body: JSONValue) throws(ExactObjectReader.Violation) {
            let reader = try ExactObjectReader(body, path: "", required: [
                "scope_id", "page_token", "continuation_receipt", "expected_row_ordinal", "limit",
            ])
            scopeID = try reader.string("scope_id")
            pageToken = try reader.string("page_token")
            receipt = try reader.string("continuation_receipt")
            expectedRowOrdinal = try reader.integer("expected_row_ordinal", in: ExactObjectReader.nonNegative)
            limit = try reader.integer("limit", in: ExactObjectReader.pageLimit)
        }
    }

    let export: SeedExport
    let scope: SeedExportScope
    /// The first row of the page.
    let ordinal: Int64

    /// The page a request names, after every binding check; any failure is the same 400 without
    /// detail, so a caller learns nothing about which binding a token broke.
    /// An export older than ``SeedExportStaging/lifetime`` (its stage purged or about to be) is refused the same way.
    static func resolve(_ request: Request, now: Int64, state: EngineState) throws -> SeedExportPage {
        let rejected = WireError(.invalidRequest, "invalid seed page request")
        guard let payload = try? state.seedPageSigner.verify(request.pageToken),
              let page = try? SeedPagePayload(payload: payload),
              let export = try SeedExport.load(exportID: page.exportID, store: state.store),
              export.created > now - SeedExportStaging.lifetime,
              let scope = export.scope(request.scopeID),
              let ordinal = Int64(exactly: page.nextRowOrdinal),
              SeedExportTokens.matches(payload, SeedExportTokens.pagePayload(
                  export: export, scope: scope, ordinal: ordinal, keyID: state.seedKeyIDs.page)),
              ordinal == request.expectedRowOrdinal, request.limit == export.pageLimit,
              ordinal == 0 || ordinal < scope.rowCount
        else { throw rejected }
        guard let receiptPayload = try? state.seedReceiptSigner.verify(request.receipt),
              SeedExportTokens.matches(receiptPayload, try SeedExportTokens.receiptPayload(
                  export: export, scope: scope, keyID: state.seedKeyIDs.receipt))
        else { throw rejected }
        return SeedExportPage(export: export, scope: scope, ordinal: ordinal)
    }

    /// Calls `body` with the staged rows of ordinals `ordinal..<end` in ordinal order, as columns `table_id, pk, row,
    /// server_version, row_digest`. A row staged by reference takes the projection's body, which must still be the
    /// staged version: the projection's triggers save the body into the stage before any change, so a mismatch is a
    /// broken snapshot. Exports staged before layout 5 read their copied rows.
    private func forEachStagedRow(
        end: Int64, state: EngineState, _ body: (any StoreRow) throws -> Void
    ) throws {
        guard let first = scope.firstStaged else {
            try state.store.db.cachedStatement("""
                SELECT table_id, pk, row, server_version, row_digest FROM seed_export_rows
                WHERE export_key = ? AND scope_id = ? AND ordinal >= ? AND ordinal < ? ORDER BY ordinal
                """).forEachRow([.integer(export.key), .text(scope.id), .integer(ordinal), .integer(end)], body)
            return
        }
        try state.store.db.cachedStatement("""
            SELECT r.table_id, r.pk, coalesce(r.row, p.row), r.server_version, r.row_digest,
                   r.row IS NULL AND (p.row IS NULL OR p.server_version IS DISTINCT FROM r.server_version)
            FROM rebuild_rows r LEFT JOIN projection p ON r.row IS NULL AND p.identity = r.identity
            WHERE r.staged >= ? AND r.staged < ? AND r.session_id = ? ORDER BY r.staged
            """).forEachRow([.integer(first + ordinal), .integer(first + end), .integer(export.stagingSession)]) { row in
            guard row.int64(at: 5) == 0 else { throw SyncIntegrityViolation() }
            try body(row)
        }
    }

    /// The manifest the export was taken under (key fields come from it, not from whatever is current): the current
    /// one when the schema has not changed since, without reading and parsing the stored copy for every page.
    private func exportedManifest(state: EngineState) throws -> SchemaManifest {
        if state.manifest.schemaVersion == export.schemaVersion,
           state.manifest.schemaHash.exactlyEquals(export.schemaHash) {
            return state.manifest
        }
        guard let reference = try? SchemaReference(version: export.schemaVersion, hash: export.schemaHash),
              let (manifest, _) = try state.store.manifest(reference)
        else { throw SyncIntegrityViolation() }
        return manifest
    }

    /// The response body: records in ascending row-identity order (staged ordinal order) and the
    /// next page's token, or null on the last page. Every column is spliced in its stored wire form (canonical key
    /// and row JSON, raw digest, ASCII version), as rebuild pages are (``RebuildPage``).
    func body(state: EngineState) throws -> [UInt8] {
        let end = ordinal + export.pageLimit
        let hasMore = end < scope.rowCount
        var w = ResponseWriter(capacity: 1024 + Int(export.pageLimit) * 512)
        var names = TableNames(manifest: try exportedManifest(state: state))
        w.raw("{")
        w.key("scope")
        try w.string(scope.id)
        w.raw(",")
        w.key("records")
        w.raw("[")
        var written: Int64 = 0
        try forEachStagedRow(end: min(end, scope.rowCount), state: state) { row in
            if written > 0 { w.raw(",") }
            written += 1
            try names.select(row, column: 0)
            w.raw("{")
            w.key("table")
            w.splice(names.table)
            w.raw(",")
            w.key("pk")
            w.raw("{")
            w.splice(names.keyField)
            w.raw(":")
            w.spliceColumn(row, 1)
            w.raw("},")
            w.key("row_checksum")
            try w.checksumColumn(row, 4)
            w.raw(",")
            w.key("server_version")
            try w.stringColumn(row, 3)
            w.raw(",")
            w.key("row")
            w.spliceColumn(row, 2)
            w.raw("}")
        }
        // The stage is the snapshot: fewer rows than the export promised means it was damaged.
        guard written == min(export.pageLimit, max(0, scope.rowCount - ordinal)) else { throw SyncIntegrityViolation() }
        w.raw("],")
        w.key("page_token")
        if hasMore {
            try w.string(state.seedPageSigner.issue(SeedExportTokens.pagePayload(
                export: export, scope: scope, ordinal: end, keyID: state.seedKeyIDs.page)))
        } else {
            w.raw("null")
        }
        w.raw(",")
        w.key("has_more")
        w.bool(hasMore)
        w.raw("}")
        return w.bytes
    }
}
