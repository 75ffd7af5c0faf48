import CCrypto
import SynchroProtocol

/// Issues and verifies the server's opaque tokens: `<prefix>.base64url(P).base64url(MAC)` where P is
/// the RFC 8785 form of a JSON payload and MAC = HMAC-SHA-256(key, purpose || 0x00 || P).
///
/// One signer per purpose (pull cursor, rebuild continuation, seed page, seed receipt) with its own
/// key, so a token of one kind can never verify as another (`spec/integrity.md` §7.2).
public struct TokenSigner: Sendable {
    public let prefix: String
    public let purpose: String
    private let key: [UInt8]

    /// Why a presented token is not one of ours. Deliberately without detail for the wire.
    public enum Rejection: Error, Sendable, Equatable {
        case malformed
        case forged
    }

    public init(prefix: String, purpose: String, key: [UInt8]) {
        precondition(key.count >= 32, "token keys are at least 256 bits")
        self.prefix = prefix
        self.purpose = purpose
        self.key = key
    }

    /// The token for `payload`.
    public func issue(_ payload: JSONValue) -> String {
        // Server-built payloads hold only protocol strings and integers, which always canonicalize.
        let octets = (try? CanonicalJSON.encode(payload)) ?? []
        return "\(prefix).\(Base64URL.encode(octets)).\(Base64URL.encode(mac(octets)))"
    }

    /// The payload of an authentic token of this kind; `forged` when the MAC does not verify.
    public func verify(_ token: String) throws(Rejection) -> JSONObject {
        let parts = token.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3, String(decoding: parts[0], as: UTF8.self) == prefix,
              let payload = Base64URL.decode(String(decoding: parts[1], as: UTF8.self)),
              let presented = Base64URL.decode(String(decoding: parts[2], as: UTF8.self)), presented.count == 32
        else { throw .malformed }
        guard Self.constantTimeEqual(presented, mac(payload)) else { throw .forged }
        guard case .object(let object)? = try? StrictJSONParser().parse(payload) else { throw .malformed }
        return object
    }

    private func mac(_ payload: [UInt8]) -> [UInt8] {
        var message = Array(purpose.utf8)
        message.append(0)
        message.append(contentsOf: payload)
        var out = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 32
        key.withUnsafeBufferPointer { k in
            message.withUnsafeBufferPointer { m in
                out.withUnsafeMutableBufferPointer { o in
                    _ = HMAC(EVP_sha256(), k.baseAddress, Int32(k.count), m.baseAddress, m.count, o.baseAddress, &length)
                }
            }
        }
        return out
    }

    /// Compares two MACs in time independent of where they differ.
    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        return a.withUnsafeBytes { x in b.withUnsafeBytes { y in CRYPTO_memcmp(x.baseAddress, y.baseAddress, a.count) == 0 } }
    }
}
