/// The two seed token kinds (`spec/integrity.md` §7.2): export page tokens and continuation receipts.
public enum SeedTokenKind: String, Sendable, Hashable, CaseIterable {
    /// Page token `sp1.…`: the position of the next export page.
    case page = "sp1"
    /// Continuation receipt `sc1.…`: what a seed's scope was exported at, redeemed on connect.
    case continuation = "sc1"

    /// The token prefix before the first dot.
    public var prefix: String { rawValue }

    /// The HMAC domain the server keys this kind with; the MAC input is `domain || 0x00 || P`.
    public var macDomain: String {
        switch self {
        case .page: "synchro:v3:seed-page:v1"
        case .continuation: "synchro:v3:seed-continuation:v1"
        }
    }
}

/// Why a string is not a well-formed seed token. Descriptions never include the token or payload.
public enum SeedTokenError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The text before the first dot is neither `sp1` nor `sc1`.
    case wrongPrefix
    /// A well-formed token of the other kind where one kind was required.
    case unexpectedKind(expected: SeedTokenKind, found: SeedTokenKind)
    /// The token does not have exactly three dot-separated segments.
    case segmentCount(Int)
    /// The payload segment is not canonical unpadded base64url.
    case payloadNotBase64URL
    /// The MAC segment is not canonical unpadded base64url.
    case macNotBase64URL
    /// The MAC does not decode to 32 octets (a full HMAC-SHA-256).
    case macLength(octets: Int)
    /// The payload octets are not strict JSON.
    case payloadNotJSON(JSONParseError)
    /// The payload is JSON but not an object.
    case payloadNotObject
    /// The payload octets differ from their own RFC 8785 form (or have none).
    case payloadNotCanonical

    /// The stable snake_case name of the broken rule.
    public var rule: String {
        switch self {
        case .wrongPrefix: "wrong_prefix"
        case .unexpectedKind: "unexpected_kind"
        case .segmentCount: "segment_count"
        case .payloadNotBase64URL: "payload_not_base64url"
        case .macNotBase64URL: "mac_not_base64url"
        case .macLength: "mac_length"
        case .payloadNotJSON: "payload_not_json"
        case .payloadNotObject: "payload_not_object"
        case .payloadNotCanonical: "payload_not_canonical"
        }
    }

    public var description: String {
        let detail =
            switch self {
            case .wrongPrefix: "the prefix is neither sp1 nor sc1"
            case .unexpectedKind(let expected, let found): "expected a \(expected.prefix) token, found \(found.prefix)"
            case .segmentCount(let count): "expected 3 dot-separated segments, found \(count)"
            case .payloadNotBase64URL: "the payload segment is not canonical unpadded base64url"
            case .macNotBase64URL: "the MAC segment is not canonical unpadded base64url"
            case .macLength(let octets): "the MAC is \(octets) octets, not 32"
            case .payloadNotJSON(let error): "the payload is not JSON (\(error.rule.rawValue) at byte \(error.offset))"
            case .payloadNotObject: "the payload is not a JSON object"
            case .payloadNotCanonical: "the payload is not in its RFC 8785 form"
            }
        return "invalid seed token: \(rule): \(detail)"
    }
}

/// A decoded — not verified — seed token `<prefix>.base64url(P).base64url(MAC)` (`spec/integrity.md`
/// §7.2). The tool has no key, so it treats the MAC as opaque and decodes P only to cross-check
/// bindings; a token that decodes is still untrusted until the server accepts it.
public struct SeedToken: Sendable, Hashable, CustomStringConvertible {
    /// The MAC length: a full HMAC-SHA-256.
    public static let macOctets = 32

    /// Page token or continuation receipt, from the prefix.
    public let kind: SeedTokenKind
    /// P: the RFC 8785 UTF-8 octets of the payload, exactly as carried.
    public let payloadOctets: [UInt8]
    /// The parsed payload object.
    public let payload: JSONObject
    /// The 32 MAC octets (opaque here).
    public let mac: [UInt8]

    /// Decodes a token of either kind, checking the envelope, MAC length and payload canonical form.
    public static func decode(_ token: String) throws(SeedTokenError) -> SeedToken {
        let segments = token.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard let first = segments.first,
            let kind = SeedTokenKind.allCases.first(where: { first.elementsEqual($0.prefix.utf8) })
        else { throw .wrongPrefix }
        guard segments.count == 3 else { throw .segmentCount(segments.count) }
        guard let payloadOctets = Base64URL.decode(String(decoding: segments[1], as: UTF8.self)) else {
            throw .payloadNotBase64URL
        }
        guard let mac = Base64URL.decode(String(decoding: segments[2], as: UTF8.self)) else {
            throw .macNotBase64URL
        }
        guard mac.count == macOctets else { throw .macLength(octets: mac.count) }
        let payload = try parseCanonicalPayload(payloadOctets)
        return SeedToken(kind: kind, payloadOctets: payloadOctets, payload: payload, mac: mac)
    }

    /// Decodes a token that must be of `kind`.
    public static func decode(_ token: String, expecting kind: SeedTokenKind) throws(SeedTokenError) -> SeedToken {
        let decoded = try decode(token)
        guard decoded.kind == kind else { throw .unexpectedKind(expected: kind, found: decoded.kind) }
        return decoded
    }

    /// Assembles a token text from a payload and a MAC computed elsewhere (by a key holder, or a
    /// fake one in tests); P is the RFC 8785 form of `payload`.
    public static func encode(kind: SeedTokenKind, payload: JSONObject, mac: [UInt8]) throws(SeedTokenError) -> String {
        guard mac.count == macOctets else { throw .macLength(octets: mac.count) }
        let octets: [UInt8]
        do {
            octets = try CanonicalJSON.encode(.object(payload))
        } catch {
            throw .payloadNotCanonical
        }
        return "\(kind.prefix).\(Base64URL.encode(octets)).\(Base64URL.encode(mac))"
    }

    /// The HMAC input `ASCII(domain) || 0x00 || P` a key holder authenticates.
    public var macInput: [UInt8] {
        var writer = OctetWriter(domain: kind.macDomain, capacity: payloadOctets.count + 40)
        writer.append(payloadOctets)
        return writer.bytes
    }

    /// Kind and payload size only: tokens are bearer material and never logged.
    public var description: String {
        "SeedToken(\(kind.prefix), payload \(payloadOctets.count) octets)"
    }

    private static func parseCanonicalPayload(_ octets: [UInt8]) throws(SeedTokenError) -> JSONObject {
        let value: JSONValue
        do {
            value = try StrictJSONParser().parse(octets)
        } catch {
            throw .payloadNotJSON(error)
        }
        guard case .object(let object) = value else { throw .payloadNotObject }
        guard let canonical = try? CanonicalJSON.encode(value), canonical == octets else {
            throw .payloadNotCanonical
        }
        return object
    }
}
