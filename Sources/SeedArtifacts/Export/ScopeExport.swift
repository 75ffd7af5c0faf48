import SynchroProtocol

/// Pages through one portable scope and checks every page while it streams (`spec/seed-format.md` §5 step 12,
/// `spec/integrity.md` §7.4 items 3–7): page shape and scope, token bindings (export, schema, scope,
/// generations, boundary, next ordinal, page limit), records, strictly increasing row identity across the
/// scope, fresh page tokens, and at the end cardinality and the recomputed scope digest. Memory is two pages: the
/// one being written and the one read ahead.
struct ScopeExport {
    let export: SeedExportManifest
    let scope: SeedExportManifest.Scope
    let schemaHashOctets: [UInt8]

    /// Streams the scope into `writer`; returns the number of rows written. Each next page is read and its records
    /// checked ahead (``PageReadAhead``) while this one is written.
    func run(
        source: any SeedExportSource, checker: SeedRecordChecker, writer: SeedDatabaseWriter,
        progress: (Int64) -> Void
    ) throws(SeedExportError) -> Int64 {
        try checkReceipt()
        var digest: ScopeDigestAccumulator
        do {
            digest = try ScopeDigestAccumulator(
                schemaHash: schemaHashOctets, scopeID: scope.id, cardinality: UInt64(scope.cardinality))
        } catch {
            throw .scopeDigest(scope: scope.id)
        }
        var ordinal: Int64 = 0
        var seenTokens: Set<String> = [scope.pageToken]
        var previous: RowIdentity?
        try checkPageToken(scope.pageToken, ordinal: 0)
        let slot = CheckerSlot(checker)
        var pending: PageReadAhead? = PageReadAhead(
            source: source, request: request(token: scope.pageToken, ordinal: 0), checker: slot)
        // A failure while a page is read ahead waits for that read: no request of this export outlives it.
        defer { _ = try? pending?.wait() }
        while let reading = pending {
            pending = nil
            let page = try reading.wait()
            if page.count > export.pageLimit || (page.hasMore && page.count != export.pageLimit) {
                throw .page(scope: scope.id, ordinal: ordinal, rule: "page_size")
            }
            let nextOrdinal = ordinal + Int64(page.count)
            if page.hasMore {
                guard let next = page.nextToken, !next.isEmpty else {
                    throw .page(scope: scope.id, ordinal: nextOrdinal, rule: "missing_next_token")
                }
                guard seenTokens.insert(next).inserted else {
                    throw .page(scope: scope.id, ordinal: nextOrdinal, rule: "repeated_page_token")
                }
                try checkPageToken(next, ordinal: nextOrdinal)
                pending = PageReadAhead(
                    source: source, request: request(token: next, ordinal: nextOrdinal), checker: slot)
            } else if page.nextToken != nil {
                throw .page(scope: scope.id, ordinal: nextOrdinal, rule: "token_on_last_page")
            }
            for verified in page.records {
                if let previous, !(previous < verified.identity) {
                    throw .record(scope: scope.id, ordinal: ordinal, table: nil, rule: "row_identity_not_increasing")
                }
                previous = verified.identity
                do {
                    try digest.add(identity: verified.identity, rowDigest: verified.digest)
                } catch {
                    throw .cardinality(scope: scope.id, expected: scope.cardinality, observed: ordinal + 1)
                }
                try writer.write(record: verified, scope: scope.id)
                ordinal += 1
            }
            if let (_, failure) = page.failure {
                throw .record(scope: scope.id, ordinal: ordinal, table: failure.table, rule: failure.rule)
            }
            progress(Int64(page.count))
        }
        guard ordinal == scope.cardinality else {
            throw .cardinality(scope: scope.id, expected: scope.cardinality, observed: ordinal)
        }
        let final: [UInt8]
        do {
            final = try digest.finalize()
        } catch {
            throw .cardinality(scope: scope.id, expected: scope.cardinality, observed: ordinal)
        }
        guard final == scope.checksum.digest else { throw .scopeDigest(scope: scope.id) }
        return ordinal
    }

    private func request(token: String, ordinal: Int64) -> SeedPageRequest {
        SeedPageRequest(
            scopeID: scope.id, pageToken: token, receipt: scope.continuation, expectedRowOrdinal: ordinal,
            limit: export.pageLimit)
    }

    /// The page token's payload names this export, scope, snapshot and position (the MAC stays the server's).
    private func checkPageToken(_ token: String, ordinal: Int64) throws(SeedExportError) {
        guard let decoded = try? SeedToken.decode(token, expecting: .page),
              let payload = try? SeedPagePayload(token: decoded)
        else { throw .token(scope: scope.id, rule: "invalid_page_token") }
        guard binds(exportID: payload.exportID, manifestHash: payload.exportManifestHash, schemaHash: payload.schemaHash,
                    scopeID: payload.scopeID, generations: (payload.registryGeneration, payload.membershipGeneration,
                    payload.retentionGeneration, payload.streamGeneration), boundary: payload.snapshotBoundary),
              payload.pageLimit == UInt64(export.pageLimit)
        else { throw .token(scope: scope.id, rule: "page_token_binding") }
        guard payload.nextRowOrdinal == UInt64(ordinal) else {
            throw .page(scope: scope.id, ordinal: ordinal, rule: "page_ordinal_mismatch")
        }
    }

    /// The members page tokens and receipts share name exactly this export, scope and snapshot.
    private func binds(
        exportID: String, manifestHash: String, schemaHash: String, scopeID: String,
        generations: (registry: UInt64, membership: UInt64, retention: UInt64, stream: UInt64),
        boundary: SeedSnapshotBoundary
    ) -> Bool {
        exportID.exactlyEquals(export.exportID) && manifestHash.exactlyEquals(export.exportManifestHash)
            && schemaHash.exactlyEquals(export.schemaHash) && scopeID.exactlyEquals(scope.id)
            && generations.registry == UInt64(scope.registryGeneration)
            && generations.membership == UInt64(scope.membershipGeneration)
            && generations.retention == UInt64(scope.retentionGeneration)
            && String(generations.stream) == export.streamGeneration && boundary == export.snapshotBoundary
    }

    /// The receipt's payload matches the scope entry it was issued with (`spec/integrity.md` §7.4 item 7).
    private func checkReceipt() throws(SeedExportError) {
        guard let decoded = try? SeedToken.decode(scope.continuation, expecting: .continuation),
              let payload = try? SeedContinuationPayload(token: decoded)
        else { throw .token(scope: scope.id, rule: "invalid_receipt") }
        guard binds(exportID: payload.exportID, manifestHash: payload.exportManifestHash, schemaHash: payload.schemaHash,
                    scopeID: payload.scopeID, generations: (payload.registryGeneration, payload.membershipGeneration,
                    payload.retentionGeneration, payload.streamGeneration), boundary: payload.snapshotBoundary),
              payload.cardinality == UInt64(scope.cardinality),
              payload.checksumDigest.exactlyEquals(scope.checksum.hex)
        else { throw .token(scope: scope.id, rule: "receipt_binding") }
    }
}
