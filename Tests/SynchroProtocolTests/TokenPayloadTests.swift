import Testing

@testable import SynchroProtocol

@Suite("Seed token payloads")
struct TokenPayloadTests {
    static let fakeMAC = [UInt8](repeating: 0xAB, count: 32)
    static let hashA = String(repeating: "a", count: 64)
    static let hashB = String(repeating: "b", count: 64)
    static let nonce = Base64URL.encode([UInt8](repeating: 7, count: 32))

    /// A continuation receipt payload with the member set of integrity §7.3, in non-canonical order.
    static func receiptPayload(dropping dropped: String? = nil, setting extra: [JSONMember] = []) -> JSONObject {
        var members = [
            JSONMember("kind", .string("portable_seed_continuation")),
            JSONMember("version", .number(JSONNumber(1))),
            JSONMember("key_id", .string("k1")),
            JSONMember("export_id", .string("0193f0a4-5c1e-7b21-8e4d-2f6a9b3c1d00")),
            JSONMember("export_manifest_hash", .string(hashA)),
            JSONMember("schema_hash", .string(hashB)),
            JSONMember("scope_id", .string("shared:catalog")),
            JSONMember("registry_generation", .string("1")),
            JSONMember("membership_generation", .string("2")),
            JSONMember("retention_generation", .string("0")),
            JSONMember("stream_generation", .string("18446744073709551615")),
            JSONMember("snapshot_boundary", .object(JSONObject([
                JSONMember("position_kind", .string("transaction_end")), JSONMember("commit_lsn", .string("0/16B3748")),
            ]))),
            JSONMember("cardinality", .string("4210")),
            JSONMember("checksum", .object(JSONObject([
                JSONMember("algorithm", .string("sha256")), JSONMember("version", .number(JSONNumber(1))),
                JSONMember("encoding", .string("hex")), JSONMember("digest", .string(hashA)),
            ]))),
            JSONMember("issued_at", .string("2026-10-12T09:30:01.000000Z")),
        ]
        members.removeAll { dropped.map($0.key.exactlyEquals) ?? false }
        for member in extra {
            if let i = members.firstIndex(where: { $0.key.exactlyEquals(member.key) }) {
                members[i] = member
            } else {
                members.append(member)
            }
        }
        return JSONObject(members)
    }

    /// A page token payload with the member set of integrity §7.2.
    static func pagePayload(setting extra: [JSONMember] = []) -> JSONObject {
        var members = [
            JSONMember("kind", .string("portable_seed_page")),
            JSONMember("version", .number(JSONNumber(1))),
            JSONMember("key_id", .string("k1")),
            JSONMember("export_id", .string("0193f0a4-5c1e-7b21-8e4d-2f6a9b3c1d00")),
            JSONMember("transaction_nonce", .string(nonce)),
            JSONMember("export_manifest_hash", .string(hashA)),
            JSONMember("schema_hash", .string(hashB)),
            JSONMember("scope_id", .string("shared:catalog")),
            JSONMember("registry_generation", .string("1")),
            JSONMember("membership_generation", .string("2")),
            JSONMember("retention_generation", .string("3")),
            JSONMember("stream_generation", .string("4")),
            JSONMember("snapshot_boundary", .object(JSONObject([
                JSONMember("position_kind", .string("generation_start")),
            ]))),
            JSONMember("next_row_ordinal", .string("1000")),
            JSONMember("page_limit", .string("1000")),
        ]
        for member in extra {
            if let i = members.firstIndex(where: { $0.key.exactlyEquals(member.key) }) { members[i] = member }
        }
        return JSONObject(members)
    }

    /// Assembles a token from raw segments, bypassing the encoder's checks.
    static func token(_ prefix: String, payload: [UInt8], mac: [UInt8] = fakeMAC) -> String {
        "\(prefix).\(Base64URL.encode(payload)).\(Base64URL.encode(mac))"
    }

    @Test("a receipt built with a known payload and a fake MAC decodes to that payload")
    func decodeReceipt() throws {
        let payload = Self.receiptPayload()
        let text = try SeedToken.encode(kind: .continuation, payload: payload, mac: Self.fakeMAC)
        #expect(text.hasPrefix("sc1."))
        let token = try SeedToken.decode(text)
        #expect(token.kind == .continuation)
        #expect(token.mac == Self.fakeMAC)
        #expect(token.payloadOctets == (try CanonicalJSON.encode(.object(payload))))
        #expect(String(decoding: token.payloadOctets.prefix(22), as: UTF8.self) == #"{"cardinality":"4210","#)
        #expect(JSONValue.object(token.payload) == (try StrictJSONParser().parse(token.payloadOctets)))

        let receipt = try SeedContinuationPayload(token: token)
        #expect(receipt.cardinality == 4210)
        #expect(receipt.streamGeneration == UInt64.max)
        #expect(receipt.retentionGeneration == 0)
        #expect(receipt.snapshotBoundary == .transactionEnd(commitLSN: "0/16B3748"))
        #expect(receipt.checksumDigest == Self.hashA)
        #expect(receipt.issuedAt == "2026-10-12T09:30:01.000000Z")
        #expect(receipt.scopeID == "shared:catalog")
    }

    @Test("a page token decodes to its typed view")
    func decodePage() throws {
        let text = try SeedToken.encode(kind: .page, payload: Self.pagePayload(), mac: Self.fakeMAC)
        let token = try SeedToken.decode(text, expecting: .page)
        let page = try SeedPagePayload(token: token)
        #expect(page.nextRowOrdinal == 1000)
        #expect(page.pageLimit == 1000)
        #expect(page.snapshotBoundary == .generationStart)
        #expect(page.transactionNonce == Self.nonce)
        #expect(throws: SeedPayloadError.wrongTokenKind(expected: .continuation, found: .page)) {
            try SeedContinuationPayload(token: token)
        }
    }

    @Test("the MAC input is the kind's domain, a zero octet and the payload octets")
    func macInput() throws {
        let token = try SeedToken.decode(SeedToken.encode(kind: .page, payload: Self.pagePayload(), mac: Self.fakeMAC))
        #expect(token.macInput == Array("synchro:v3:seed-page:v1".utf8) + [0] + token.payloadOctets)
        #expect(SeedTokenKind.continuation.macDomain == "synchro:v3:seed-continuation:v1")
    }

    static let canonicalPayload = Array(#"{"kind":"x","version":1}"#.utf8)

    static let malformed: [(String, SeedTokenError)] = [
        (token("sx1", payload: canonicalPayload), .wrongPrefix),
        (token("SC1", payload: canonicalPayload), .wrongPrefix),
        ("", .wrongPrefix),
        ("sc1", .segmentCount(1)),
        ("sc1." + Base64URL.encode(canonicalPayload), .segmentCount(2)),
        (token("sc1", payload: canonicalPayload) + ".AAAA", .segmentCount(4)),
        ("sc1." + Base64URL.encode(canonicalPayload) + "=." + Base64URL.encode(fakeMAC), .payloadNotBase64URL),
        ("sc1.e+J9." + Base64URL.encode(fakeMAC), .payloadNotBase64URL),
        ("sc1." + Base64URL.encode(canonicalPayload) + ".q6ur/w", .macNotBase64URL),
        (token("sc1", payload: canonicalPayload, mac: Array(fakeMAC.dropLast())), .macLength(octets: 31)),
        (token("sc1", payload: canonicalPayload, mac: []), .macLength(octets: 0)),
        (token("sc1", payload: Array("[1]".utf8)), .payloadNotObject),
        (token("sc1", payload: Array(#"{"version":1, "kind":"x"}"#.utf8)), .payloadNotCanonical),
        (token("sc1", payload: Array(#"{"version":1,"kind":"x"}"#.utf8)), .payloadNotCanonical),
        (token("sc1", payload: Array(#"{"kind":"x","version":1.0}"#.utf8)), .payloadNotCanonical),
        (token("sc1", payload: Array(#"{"kind":"\u0078","version":1}"#.utf8)), .payloadNotCanonical),
        (token("sc1", payload: Array(#"{"kind":"x","version":1}"#.utf8) + [0x0A]), .payloadNotCanonical),
    ]

    @Test("each malformed token is rejected for its own reason", arguments: malformed)
    func malformedToken(text: String, expected: SeedTokenError) {
        #expect(throws: expected) { try SeedToken.decode(text) }
    }

    @Test("a payload that is not JSON is rejected with the parser's rule", arguments: [
        "", #"{"kind":"x""#, #"{"a":1,"a":1}"#, "{} {}",
    ])
    func payloadNotJSON(payload: String) {
        #expect {
            try SeedToken.decode(Self.token("sp1", payload: Array(payload.utf8)))
        } throws: { ($0 as? SeedTokenError)?.rule == "payload_not_json" }
    }

    @Test("a token of the other kind is refused where one kind is expected")
    func expectedKind() throws {
        let page = try SeedToken.encode(kind: .page, payload: Self.pagePayload(), mac: Self.fakeMAC)
        #expect(throws: SeedTokenError.unexpectedKind(expected: .continuation, found: .page)) {
            try SeedToken.decode(page, expecting: .continuation)
        }
    }

    @Test("the encoder refuses a MAC of the wrong length")
    func encoderMAC() {
        #expect(throws: SeedTokenError.macLength(octets: 16)) {
            try SeedToken.encode(kind: .page, payload: Self.pagePayload(), mac: [UInt8](repeating: 0, count: 16))
        }
    }

    static let receiptDefects: [(String?, [JSONMember], SeedPayloadError)] = [
        ("issued_at", [], .missingMember("issued_at")),
        ("kind", [], .missingMember("kind")),
        (nil, [JSONMember("user_id", .string("u"))], .unknownMember),
        (nil, [JSONMember("kind", .string("portable_seed_page"))], .wrongPayloadKind),
        (nil, [JSONMember("version", .number(JSONNumber(2)))], .unsupportedVersion),
        (nil, [JSONMember("version", .string("1"))], .unsupportedVersion),
        (nil, [JSONMember("cardinality", .number(JSONNumber(4210)))], .invalidMember("cardinality")),
        (nil, [JSONMember("cardinality", .string("04210"))], .invalidMember("cardinality")),
        (nil, [JSONMember("cardinality", .string("-1"))], .invalidMember("cardinality")),
        (nil, [JSONMember("cardinality", .string(""))], .invalidMember("cardinality")),
        (nil, [JSONMember("stream_generation", .string("18446744073709551616"))], .invalidMember("stream_generation")),
        (nil, [JSONMember("export_id", .string("0193F0A4-5C1E-7B21-8E4D-2F6A9B3C1D00"))], .invalidMember("export_id")),
        (nil, [JSONMember("schema_hash", .string("abc"))], .invalidMember("schema_hash")),
        (nil, [JSONMember("key_id", .string(""))], .invalidMember("key_id")),
        (nil, [JSONMember("issued_at", .string("2026-10-12T09:30:01Z"))], .invalidMember("issued_at")),
        (nil, [JSONMember("snapshot_boundary", .object(JSONObject([
            JSONMember("position_kind", .string("transaction_end")),
        ])))], .invalidMember("snapshot_boundary")),
        (nil, [JSONMember("snapshot_boundary", .object(JSONObject([
            JSONMember("position_kind", .string("generation_start")), JSONMember("commit_lsn", .string("0/1")),
        ])))], .invalidMember("snapshot_boundary")),
        (nil, [JSONMember("checksum", .object(JSONObject([
            JSONMember("algorithm", .string("sha256")), JSONMember("version", .number(JSONNumber(1))),
            JSONMember("encoding", .string("hex")), JSONMember("digest", .string(hashA.uppercased())),
        ])))], .invalidMember("checksum")),
        (nil, [JSONMember("checksum", .object(JSONObject([
            JSONMember("algorithm", .string("crc32")), JSONMember("version", .number(JSONNumber(1))),
            JSONMember("encoding", .string("hex")), JSONMember("digest", .string(hashA)),
        ])))], .invalidMember("checksum")),
    ]

    @Test("a receipt payload must have exactly the members of integrity §7.3, each in its form",
          arguments: receiptDefects)
    func receiptDefect(dropped: String?, extra: [JSONMember], expected: SeedPayloadError) {
        #expect(throws: expected) {
            try SeedContinuationPayload(payload: Self.receiptPayload(dropping: dropped, setting: extra))
        }
    }

    @Test("a page payload checks its nonce, ordinal and limit", arguments: [
        JSONMember("transaction_nonce", .string(Base64URL.encode([1, 2, 3]))),
        JSONMember("next_row_ordinal", .string("1e3")),
        JSONMember("page_limit", .number(JSONNumber(1000))),
    ])
    func pageDefect(member: JSONMember) {
        #expect(throws: SeedPayloadError.invalidMember(member.key)) {
            try SeedPagePayload(payload: Self.pagePayload(setting: [member]))
        }
    }

    @Test("token and error descriptions never reveal the token or its payload")
    func privacy() throws {
        let text = try SeedToken.encode(kind: .continuation, payload: Self.receiptPayload(), mac: Self.fakeMAC)
        let token = try SeedToken.decode(text)
        let segments = text.split(separator: ".").map(String.init)
        for shown in ["\(token)", "\(try SeedContinuationPayload(token: token))"] {
            #expect(!shown.contains(segments[1]) && !shown.contains(segments[2]))
            #expect(!shown.contains("shared:catalog") && !shown.contains("k1"))
        }
        do {
            _ = try SeedToken.decode(text + "x")
            Issue.record("a damaged MAC segment must not decode")
        } catch {
            #expect(!error.description.contains(segments[2]))
        }
    }
}
