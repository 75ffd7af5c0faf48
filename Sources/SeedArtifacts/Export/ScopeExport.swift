import Dispatch
import SynchroProtocol

/// Pages through one portable scope and checks every page while it streams (`spec/seed-format.md` §5 step 12,
/// `spec/integrity.md` §7.4 items 3–7): page shape and scope, token bindings (export, schema, scope,
/// generations, boundary, next ordinal, page limit), records, strictly increasing row identity across the
/// scope, fresh page tokens, and at the end cardinality and the recomputed scope digest. Memory is one page.
struct ScopeExport {
    let export: SeedExportManifest
    let scope: SeedExportManifest.Scope
    let schemaHashOctets: [UInt8]

    /// Streams the scope into `writer`; returns the number of rows written.
    func run(
        source: any SeedExportSource, checker: inout SeedRecordChecker, writer: SeedDatabaseWriter,
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
        var pending = PageFetch(source: source, request: request(token: scope.pageToken, ordinal: 0))
        while true {
            let page = try parse(try pending.wait(), ordinal: ordinal)
            if page.records.count > export.pageLimit || (page.hasMore && page.records.count != export.pageLimit) {
                throw .page(scope: scope.id, ordinal: ordinal, rule: "page_size")
            }
            // The next page is fetched while this one is checked and written: the server's work and ours overlap.
            let nextOrdinal = ordinal + Int64(page.records.count)
            if page.hasMore {
                guard let next = page.nextToken, !next.isEmpty else {
                    throw .page(scope: scope.id, ordinal: nextOrdinal, rule: "missing_next_token")
                }
                guard seenTokens.insert(next).inserted else {
                    throw .page(scope: scope.id, ordinal: nextOrdinal, rule: "repeated_page_token")
                }
                try checkPageToken(next, ordinal: nextOrdinal)
                pending = PageFetch(source: source, request: request(token: next, ordinal: nextOrdinal))
            } else if page.nextToken != nil {
                throw .page(scope: scope.id, ordinal: nextOrdinal, rule: "token_on_last_page")
            }
            for record in page.records {
                let verified: VerifiedSeedRecord
                switch checker.verify(record) {
                case .success(let value): verified = value
                case .failure(let failure):
                    throw .record(scope: scope.id, ordinal: ordinal, table: failure.table, rule: failure.rule)
                }
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
            progress(Int64(page.records.count))
            if !page.hasMore { break }
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

    private struct Page {
        let records: [JSONValue]
        let nextToken: String?
        let hasMore: Bool
    }

    private func parse(_ bytes: [UInt8], ordinal: Int64) throws(SeedExportError) -> Page {
        let json: JSONValue
        do {
            json = try StrictJSONParser().parse(bytes)
        } catch {
            throw .malformedJSON(route: "scope page", rule: error.rule.rawValue, offset: error.offset)
        }
        guard case .object(let object) = json, object.count == 4, case .string(let pageScope)? = object["scope"],
              case .array(let records)? = object["records"], case .bool(let hasMore)? = object["has_more"],
              let tokenValue = object["page_token"]
        else { throw .page(scope: scope.id, ordinal: ordinal, rule: "page_shape") }
        guard pageScope.exactlyEquals(scope.id) else {
            throw .page(scope: scope.id, ordinal: ordinal, rule: "page_scope_mismatch")
        }
        switch tokenValue {
        case .null: return Page(records: records, nextToken: nil, hasMore: hasMore)
        case .string(let next): return Page(records: records, nextToken: next, hasMore: hasMore)
        default: throw .page(scope: scope.id, ordinal: ordinal, rule: "page_shape")
        }
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

/// One page request running on its own thread; `wait()` returns its outcome.
private final class PageFetch: Sendable {
    private let outcome = Eventual<Result<[UInt8], SeedExportError>>()

    init(source: any SeedExportSource, request: SeedPageRequest) {
        DispatchQueue.global().async { [outcome] in
            outcome.provide(Result { () throws(SeedExportError) in try source.scopePage(request) })
        }
    }

    func wait() throws(SeedExportError) -> [UInt8] {
        try outcome.wait().get()
    }
}
