import SQLiteKit
import SynchroStore
import SynchroProtocol

/// §6 item 6: scopes, receipts (decoded and cross-checked against the seed's export metadata), row versions, the
/// re-digested rows, provenance edges, cardinalities and scope digests.
extension PublicationVerifier {
    struct ScopeRow {
        let rowid: Int64
        let id: String
        /// The scope checksum's digest, nil when it is not a checksum object.
        let digest: [UInt8]?
    }

    struct ReceiptRow {
        let rowid: Int64
        let scope: String
        let cardinality: Int64?
        let digest: [UInt8]?
        let payload: SeedContinuationPayload?
    }

    mutating func checkSeedState(_ connection: Connection) {
        collector.evaluated(.scopeState, .receiptMissing, .receiptExtra, .receiptInvalid, .receiptBinding,
                            .cardinalityMismatch, .scopeDigestMismatch, .scopeChecksumMismatch)
        var scopes: [ScopeRow] = []
        var receipts: [ReceiptRow] = []
        collector.guarding("reading _synchro_scopes", as: .sqliteError) {
            scopes = try readScopes(connection)
        }
        collector.guarding("reading _synchro_seed_receipts", as: .sqliteError) {
            receipts = try readReceipts(connection)
        }
        matchScopesAndReceipts(scopes, receipts)
        checkExportManifestHash(receipts)
        guard let manifest else { return }
        collector.guarding("re-reading the materialized rows", as: .sqliteError) {
            audit = try SeedRowAudit(
                connection: connection, manifest: manifest, knownScopes: Set(scopes.map(\.id)), checks: .publication,
                reopen: { [path, meter = collector.meter] in try SeedFileProbe.openImmutable(path, meter: meter) }
            ).run(into: collector)
        }
        guard let audit else { return }
        rows = audit.rows
        compareTallies(audit, scopes: scopes, receipts: receipts, manifest: manifest)
    }

    // MARK: - Scopes

    private func readScopes(_ connection: Connection) throws -> [ScopeRow] {
        try connection.query(
            """
            SELECT rowid, scope_id, cursor, checksum, generation, local_checksum FROM _synchro_scopes
            ORDER BY scope_id
            """
        ) { row -> ScopeRow? in
            let rowid = row.int64(at: 0)
            guard case .text(let id) = try row.value(at: 1), !id.isEmpty else {
                collector.add(.scopeState, table: "_synchro_scopes", row: rowid, "the scope ID is empty or not text")
                return nil
            }
            if !row.isNull(at: 2) {
                collector.add(.scopeState, scope: id, "the scope has a cursor; a seed's scopes have none")
            }
            if case .integer(0) = try row.value(at: 4) {} else {
                collector.add(.scopeState, scope: id, "the scope generation is not the integer 0")
            }
            let digest = checksumDigest(row, at: 3)
            if digest == nil {
                collector.add(.scopeState, scope: id, "the scope checksum is not a checksum object")
            }
            let local = checksumDigest(row, at: 5)
            if local == nil || local != digest {
                collector.add(.scopeState, scope: id, "the local checksum differs from the scope checksum")
            }
            return ScopeRow(rowid: rowid, id: id, digest: digest)
        }.compactMap { $0 }
    }

    // MARK: - Receipts

    private func readReceipts(_ connection: Connection) throws -> [ReceiptRow] {
        let schemaVersion = metaText(.schemaVersion).flatMap(Self.canonicalInteger)
        let schemaHash = metaText(.schemaHash)
        return try connection.query("""
            SELECT rowid, scope_id, receipt, schema_version, schema_hash, cardinality, checksum
            FROM _synchro_seed_receipts ORDER BY scope_id
            """
        ) { row -> ReceiptRow? in
            let rowid = row.int64(at: 0)
            guard case .text(let scope) = try row.value(at: 1), !scope.isEmpty else {
                collector.add(.receiptInvalid, table: "_synchro_seed_receipts", row: rowid,
                              "the receipt's scope ID is empty or not text")
                return nil
            }
            var cardinality: Int64?
            if case .integer(let value) = try row.value(at: 5), value >= 0 {
                cardinality = value
            } else {
                collector.add(.receiptInvalid, scope: scope, "the receipt cardinality is not an integer ≥ 0")
            }
            let digest = checksumDigest(row, at: 6)
            if digest == nil {
                collector.add(.receiptInvalid, scope: scope, "the receipt checksum is not a checksum object")
            }
            let storedVersion = try row.value(at: 3)
            let storedHash = try row.value(at: 4)
            if storedVersion.integerValue == nil || storedVersion.integerValue != schemaVersion
                || storedHash.textValue == nil || storedHash.textValue != schemaHash
            {
                collector.add(.receiptBinding, scope: scope,
                              "the receipt row's schema_version/schema_hash differ from the seed's schema")
            }
            let payload = decodeReceipt(try row.value(at: 2), scope: scope)
            if let payload {
                checkBinding(payload, scope: scope, cardinality: cardinality, digest: digest)
            }
            return ReceiptRow(rowid: rowid, scope: scope, cardinality: cardinality, digest: digest, payload: payload)
        }.compactMap { $0 }
    }

    /// The receipt's payload, decoded (never MAC-verified: only the server holds the key); nil, reported, when it
    /// is not a well-formed `sc1.` continuation receipt.
    private func decodeReceipt(_ stored: SQLiteValue, scope: String) -> SeedContinuationPayload? {
        guard case .text(let text) = stored, !text.isEmpty else {
            collector.add(.receiptInvalid, scope: scope, "the receipt is empty or not text")
            return nil
        }
        do {
            let token = try SeedToken.decode(text, expecting: .continuation)
            return try SeedContinuationPayload(token: token)
        } catch let error as SeedTokenError {
            collector.add(.receiptInvalid, scope: scope, "the receipt is not a continuation receipt: \(error.rule)")
        } catch let error as SeedPayloadError {
            collector.add(.receiptInvalid, scope: scope, "the receipt payload is invalid: \(error.rule)")
        } catch {
            collector.add(.receiptInvalid, scope: scope, "the receipt cannot be decoded")
        }
        return nil
    }

    /// A receipt is bound to its scope, the seed's schema and export, and the scope's cardinality and checksum
    /// (`spec/integrity.md` §7.3): every bound member must equal the seed's own value.
    private func checkBinding(
        _ payload: SeedContinuationPayload, scope: String, cardinality: Int64?, digest: [UInt8]?
    ) {
        var differing: [String] = []
        if !payload.scopeID.exactlyEquals(scope) { differing.append("scope_id") }
        if payload.schemaHash != metaText(.schemaHash) { differing.append("schema_hash") }
        if payload.exportID != metaText(.exportID) { differing.append("export_id") }
        if payload.exportManifestHash != metaText(.exportManifestHash) { differing.append("export_manifest_hash") }
        if String(payload.streamGeneration) != metaText(.streamGeneration) { differing.append("stream_generation") }
        if metaText(.snapshotBoundary).flatMap(Self.boundary) != payload.snapshotBoundary {
            differing.append("snapshot_boundary")
        }
        if let cardinality, payload.cardinality != UInt64(cardinality) { differing.append("cardinality") }
        if let digest, payload.checksumDigest != Hex.encode(digest) { differing.append("checksum") }
        if !differing.isEmpty {
            collector.add(.receiptBinding, scope: scope,
                          "the receipt was issued for another \(differing.joined(separator: ", "))")
        }
    }

    private func matchScopesAndReceipts(_ scopes: [ScopeRow], _ receipts: [ReceiptRow]) {
        let receiptScopes = Set(receipts.map(\.scope))
        let scopeIDs = Set(scopes.map(\.id))
        for scope in scopes where !receiptScopes.contains(scope.id) {
            collector.add(.receiptMissing, scope: scope.id,
                          "the scope has no continuation receipt; a seed carries only exported portable scopes")
        }
        for receipt in receipts where !scopeIDs.contains(receipt.scope) {
            collector.add(.receiptExtra, scope: receipt.scope, "the receipt's scope has no _synchro_scopes row")
        }
        for receipt in receipts {
            guard let scope = scopes.first(where: { $0.id == receipt.scope }), let digest = receipt.digest,
                  let scopeDigest = scope.digest, digest != scopeDigest
            else { continue }
            collector.add(.scopeChecksumMismatch, scope: receipt.scope,
                          "the scope checksum differs from the receipt checksum")
        }
    }

    // MARK: - Export manifest hash

    /// Recomputes the export manifest hash (`spec/integrity.md` §7.2) from the seed's metadata and its receipts'
    /// payloads: it covers the exact portable scope set with each scope's generations, cardinality and checksum,
    /// so a scope added to or removed from the seed — even with a receipt copied from elsewhere — no longer
    /// hashes to the `seed_export_manifest_hash` every receipt is bound to.
    private mutating func checkExportManifestHash(_ receipts: [ReceiptRow]) {
        collector.evaluated(.exportManifestHash)
        guard receipts.allSatisfy({ $0.payload != nil }), let exportID = metaText(.exportID),
              let stored = metaText(.exportManifestHash),
              let version = metaText(.schemaVersion).flatMap(Self.canonicalInteger),
              let hash = metaText(.schemaHash), let stream = metaText(.streamGeneration),
              let boundary = metaText(.snapshotBoundary).flatMap(Self.boundary),
              let pageLimit = metaText(.pageLimit).flatMap(Self.canonicalInteger)
        else { return }
        let scopes = receipts.sorted { $0.scope.utf8.lexicographicallyPrecedes($1.scope.utf8) }.compactMap {
            receipt -> JSONValue? in
            guard let payload = receipt.payload else { return nil }
            return .object(JSONObject([
                JSONMember("id", .string(receipt.scope)),
                JSONMember("registry_generation", Self.number(payload.registryGeneration)),
                JSONMember("membership_generation", Self.number(payload.membershipGeneration)),
                JSONMember("retention_generation", Self.number(payload.retentionGeneration)),
                JSONMember("cardinality", Self.number(payload.cardinality)),
                JSONMember("checksum", .object(JSONObject([
                    JSONMember("algorithm", .string("sha256")), JSONMember("version", .number(JSONNumber(1))),
                    JSONMember("encoding", .string("hex")), JSONMember("digest", .string(payload.checksumDigest)),
                ]))),
            ]))
        }
        // The manifest may carry the stream generation as a number (the reference server) or a string (an
        // upstream server); the seed keeps only its text, so both spellings are tried.
        var streamForms: [JSONValue] = [.string(stream)]
        if let number = Self.canonicalInteger(stream), number >= 0 {
            streamForms.insert(.number(JSONNumber(number)), at: 0)
        }
        let matches = streamForms.contains { streamValue in
            let body = JSONValue.object(JSONObject([
                JSONMember("export_id", .string(exportID)),
                JSONMember("schema_version", .number(JSONNumber(version))),
                JSONMember("schema_hash", .string(hash)),
                JSONMember("stream_generation", streamValue),
                JSONMember("snapshot_boundary", boundary.json),
                JSONMember("page_limit", .number(JSONNumber(pageLimit))),
                JSONMember("portable_scopes", .array(scopes)),
            ]))
            return SeedExportManifest.computeHash(body).exactlyEquals(stored)
        }
        if !matches {
            collector.add(.exportManifestHash, table: "_synchro_meta",
                          "the export manifest hash recomputed from the receipts (scope set, generations, "
                              + "cardinalities, checksums) and the export metadata differs from "
                              + "seed_export_manifest_hash")
        }
    }

    private static func number(_ value: UInt64) -> JSONValue {
        .number(JSONNumber(Int64(clamping: value)))
    }

    // MARK: - Cardinalities and scope digests

    private func compareTallies(
        _ audit: RowAuditResult, scopes: [ScopeRow], receipts: [ReceiptRow], manifest: ClientManifest
    ) {
        for scope in scopes {
            let receipt = receipts.first { $0.scope == scope.id }
            let tally = audit.scopes[scope.id] ?? ScopeTally(
                edges: 0,
                digest: try? ScopeDigest.compute(
                    schemaHash: manifest.manifest.schemaHashOctets, scopeID: scope.id, entries: []
                ).digest)
            if let cardinality = receipt?.cardinality, cardinality != Int64(tally.edges) {
                collector.add(.cardinalityMismatch, scope: scope.id,
                              "\(tally.edges) provenance edges, the receipt cardinality is \(cardinality)")
            }
            guard let recomputed = tally.digest else {
                collector.add(.scopeDigestMismatch, scope: scope.id,
                              "the scope digest cannot be recomputed: some of its rows cannot be digested")
                continue
            }
            if let expected = receipt?.digest ?? scope.digest, expected != recomputed {
                collector.add(.scopeDigestMismatch, scope: scope.id,
                              "the scope digest recomputed from the rows differs from the "
                                  + (receipt == nil ? "scope checksum" : "receipt checksum"))
            }
        }
    }

    // MARK: - Helpers

    func checksumDigest(_ row: Statement, at column: Int) -> [UInt8]? {
        row.isNull(at: column) ? nil : row.withTextBytes(at: column, ChecksumText.objectDigest)
    }
}
