import Foundation
import SynchroProtocol

/// A DSSE envelope (Dead Simple Signing Envelope, v1.0): a payload, its type, and signatures over the
/// pre-authentication encoding (PAE) of both, so a signature can never be replayed under another type. seedkit
/// writes one envelope per publication, with an in-toto statement as payload, as one canonical JSON line.
public struct DSSEEnvelope: Sendable, Equatable {
    /// The payload type of an in-toto statement.
    public static let inTotoPayloadType = "application/vnd.in-toto+json"

    /// One signature: the signing key's ID and the 64 signature bytes.
    public struct Signature: Sendable, Equatable {
        public let keyID: String
        public let bytes: [UInt8]
    }

    public let payloadType: String
    public let payload: [UInt8]
    public let signatures: [Signature]

    /// `"DSSEv1" SP LEN(type) SP type SP LEN(body) SP body`, lengths as ASCII decimal byte counts (DSSE protocol).
    public static func preAuthenticationEncoding(type: String, body: [UInt8]) -> [UInt8] {
        let typeBytes = Array(type.utf8)
        return Array("DSSEv1 \(typeBytes.count) ".utf8) + typeBytes + Array(" \(body.count) ".utf8) + body
    }

    /// Signs `payload` of `payloadType` with `key`.
    public static func sign(
        payload: [UInt8], payloadType: String = inTotoPayloadType, key: Ed25519PrivateKey
    ) throws(SigningError) -> DSSEEnvelope {
        let signature = try key.sign(preAuthenticationEncoding(type: payloadType, body: payload))
        return DSSEEnvelope(
            payloadType: payloadType, payload: payload,
            signatures: [Signature(keyID: key.publicKey.keyID, bytes: signature)])
    }

    public init(payloadType: String, payload: [UInt8], signatures: [Signature]) {
        self.payloadType = payloadType
        self.payload = payload
        self.signatures = signatures
    }

    /// `{"payload":base64,"payloadType":…,"signatures":[{"keyid":…,"sig":base64}]}`.
    public var json: JSONValue {
        .object(JSONObject([
            JSONMember("payloadType", .string(payloadType)),
            JSONMember("payload", .string(Data(payload).base64EncodedString())),
            JSONMember("signatures", .array(signatures.map { signature in
                .object(JSONObject([
                    JSONMember("keyid", .string(signature.keyID)),
                    JSONMember("sig", .string(Data(signature.bytes).base64EncodedString())),
                ]))
            })),
        ]))
    }

    /// The envelope as one canonical JSON line (the `.intoto.jsonl` form).
    public func encoded() throws -> [UInt8] {
        try CanonicalJSON.encode(json) + [0x0A]
    }

    /// Parses an envelope; nil when it is not JSON, lacks a member, carries a member of the wrong type, is not
    /// standard base64, or holds a signature that is not 64 bytes (a truncated signature is malformed).
    public init?(bytes: [UInt8]) {
        guard let json = try? StrictJSONParser(limits: JSONLimits(maxBytes: 16 << 20, maxDepth: 64)).parse(bytes),
              let object = json.objectValue, let type = object["payloadType"]?.stringValue,
              let payloadText = object["payload"]?.stringValue, let payload = Data(base64Encoded: payloadText),
              let list = object["signatures"]?.arrayValue, !list.isEmpty
        else { return nil }
        var signatures: [Signature] = []
        for entry in list {
            guard let entry = entry.objectValue, let keyID = entry["keyid"]?.stringValue,
                  let text = entry["sig"]?.stringValue, let bytes = Data(base64Encoded: text), bytes.count == 64
            else { return nil }
            signatures.append(Signature(keyID: keyID, bytes: Array(bytes)))
        }
        self.init(payloadType: type, payload: Array(payload), signatures: signatures)
    }
}
