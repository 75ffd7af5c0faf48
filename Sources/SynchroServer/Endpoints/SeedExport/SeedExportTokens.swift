import SynchroProtocol

/// The payloads of seed page tokens (`sp1.…`) and continuation receipts (`sc1.…`), exactly as
/// `spec/integrity.md` §7.2 and §7.3 list their members: counters as canonical unsigned decimal
/// strings, the boundary object, and the `key_id` of the signing key.
///
/// Both payloads are a pure function of the stored export (and, for a page, the row ordinal), so
/// the server checks a presented token by rebuilding the payload it would issue and comparing the
/// canonical octets: one comparison covers every binding, and a token can be re-issued identically.
enum SeedExportTokens {
    /// The page token payload for the page of `scope` whose first row has `ordinal`.
    static func pagePayload(export: SeedExport, scope: SeedExportScope, ordinal: Int64, keyID: String) -> JSONValue {
        .object(JSONObject(
            [
                JSONMember("kind", .string(SeedPagePayload.kind)),
                JSONMember("version", .number(JSONNumber(1))),
                JSONMember("key_id", .string(keyID)),
                JSONMember("export_id", .string(export.exportID)),
                JSONMember("transaction_nonce", .string(export.transactionNonce)),
                JSONMember("export_manifest_hash", .string(export.manifestHash)),
                JSONMember("schema_hash", .string(export.schemaHash)),
                JSONMember("scope_id", .string(scope.id)),
            ] + lineage(export) + [
                JSONMember("next_row_ordinal", decimal(ordinal)),
                JSONMember("page_limit", decimal(export.pageLimit)),
            ]))
    }

    /// The continuation receipt payload of `scope`. It binds no user and no client: connect adds
    /// those (`spec/integrity.md` §7.3).
    static func receiptPayload(export: SeedExport, scope: SeedExportScope, keyID: String) throws -> JSONValue {
        .object(JSONObject(
            [
                JSONMember("kind", .string(SeedContinuationPayload.kind)),
                JSONMember("version", .number(JSONNumber(1))),
                JSONMember("key_id", .string(keyID)),
                JSONMember("export_id", .string(export.exportID)),
                JSONMember("export_manifest_hash", .string(export.manifestHash)),
                JSONMember("schema_hash", .string(export.schemaHash)),
                JSONMember("scope_id", .string(scope.id)),
            ] + lineage(export) + [
                JSONMember("cardinality", decimal(scope.rowCount)),
                JSONMember("checksum", try scope.checksum()),
                JSONMember("issued_at", .string(ProtocolTimestamp.format(microseconds: export.created))),
            ]))
    }

    /// True when `presented` (an authentic, parsed payload) is exactly `expected`.
    static func matches(_ presented: JSONObject, _ expected: JSONValue) -> Bool {
        guard let a = try? CanonicalJSON.encode(.object(presented)), let b = try? CanonicalJSON.encode(expected) else {
            return false
        }
        return a == b
    }

    private static func lineage(_ export: SeedExport) -> [JSONMember] {
        [
            JSONMember("registry_generation", decimal(export.registryGeneration)),
            JSONMember("membership_generation", decimal(export.generations.membership)),
            JSONMember("retention_generation", decimal(export.generations.retention)),
            JSONMember("stream_generation", decimal(export.generations.stream)),
            JSONMember("snapshot_boundary", export.snapshotBoundary.json),
        ]
    }

    /// Stored counters are never negative, so `String` gives the canonical unsigned decimal form.
    private static func decimal(_ value: Int64) -> JSONValue { .string(String(value)) }
}

/// The `key_id` members of seed tokens: a stable, non-secret name for each seed key, so a verifier
/// can tell which key a token claims without the key itself (the reference server never rotates
/// keys, but the member is required).
struct SeedKeyIDs: Sendable {
    let page: String
    let receipt: String

    init(pageKey: [UInt8], receiptKey: [UInt8]) {
        page = Self.name(purpose: ServerKeyPurpose.seedPage.rawValue, key: pageKey)
        receipt = Self.name(purpose: ServerKeyPurpose.seedContinuation.rawValue, key: receiptKey)
    }

    /// The first 8 octets of SHA-256(purpose || 0x00 || key), in hex: one-way, so it reveals
    /// nothing of the key, and distinct per key.
    private static func name(purpose: String, key: [UInt8]) -> String {
        var writer = OctetWriter(domain: purpose, capacity: purpose.utf8.count + 1 + key.count)
        writer.append(key)
        return "k" + Hex.encode(Array(SHA256.hash(writer.bytes).prefix(8)))
    }
}

extension SeedSnapshotBoundary {
    /// The boundary of an export read at stream position `position`.
    ///
    /// The reference server has no PostgreSQL LSN; the materialized stream position is its commit
    /// order, so it is spelled the way PostgreSQL prints an LSN (`%X/%X` of the high and low 32
    /// bits). Position 0 — nothing materialized since the generation's initial load — is
    /// `generation_start`.
    init(streamPosition position: Int64) {
        guard position > 0 else {
            self = .generationStart
            return
        }
        let value = UInt64(position)
        let high = String(value >> 32, radix: 16, uppercase: true)
        let low = String(value & 0xFFFF_FFFF, radix: 16, uppercase: true)
        self = .transactionEnd(commitLSN: "\(high)/\(low)")
    }

    /// The stream position this boundary names, or nil when its LSN text is not one this server
    /// prints (the round trip must give the same text back).
    var streamPosition: Int64? {
        switch self {
        case .generationStart:
            return 0
        case .transactionEnd(let lsn):
            let parts = lsn.split(separator: "/", omittingEmptySubsequences: false)
            guard parts.count == 2, parts.allSatisfy({ (1...8).contains($0.utf8.count) }),
                  let high = UInt64(parts[0], radix: 16), let low = UInt64(parts[1], radix: 16)
            else { return nil }
            let value = high << 32 | low
            guard value > 0, value <= UInt64(Int64.max),
                  SeedSnapshotBoundary(streamPosition: Int64(value)) == self
            else { return nil }
            return Int64(value)
        }
    }
}
