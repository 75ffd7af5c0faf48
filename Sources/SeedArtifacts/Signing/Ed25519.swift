import CCrypto
import SynchroProtocol

/// An Ed25519 private key held by OpenSSL (`EVP_PKEY`), used to sign publications. It is read from PEM
/// (PKCS#8), written only to a new file of mode 0600 by ``SigningKeyFile``, and never printed: its description
/// is its key ID.
public final class Ed25519PrivateKey: @unchecked Sendable, CustomStringConvertible {
    // @unchecked: the EVP_PKEY is never mutated after creation, and OpenSSL allows concurrent use of a const key.
    fileprivate let key: OpaquePointer

    private init(key: OpaquePointer) {
        self.key = key
    }

    deinit {
        EVP_PKEY_free(key)
    }

    /// A fresh key from OpenSSL's CSPRNG.
    public static func generate() throws(SigningError) -> Ed25519PrivateKey {
        guard let context = EVP_PKEY_CTX_new_id(seedkit_evp_pkey_ed25519(), nil) else {
            throw .crypto(operation: "allocate a key context")
        }
        defer { EVP_PKEY_CTX_free(context) }
        var key: OpaquePointer?
        guard EVP_PKEY_keygen_init(context) == 1, EVP_PKEY_keygen(context, &key) == 1, let key else {
            throw .crypto(operation: "generate an Ed25519 key")
        }
        return Ed25519PrivateKey(key: key)
    }

    /// The key in PEM text `pem`; `source` names where it came from in errors (a path or `$VARIABLE`).
    public init(pem: [UInt8], source: String) throws(SigningError) {
        let parsed: OpaquePointer? = pem.withUnsafeBytes { bytes in
            guard let bio = BIO_new_mem_buf(bytes.baseAddress, Int32(bytes.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PrivateKey(bio, nil, nil, nil)
        }
        guard let parsed else { throw .notEd25519Key(source: source) }
        guard EVP_PKEY_get_base_id(parsed) == seedkit_evp_pkey_ed25519() else {
            EVP_PKEY_free(parsed)
            throw .notEd25519Key(source: source)
        }
        key = parsed
    }

    /// The matching public key.
    public var publicKey: Ed25519PublicKey {
        // Re-read from the DER SubjectPublicKeyInfo, so the public key owns a key without the private half.
        Ed25519PublicKey(unchecked: Ed25519PublicKey.subjectPublicKeyInfo(of: key))!
    }

    /// Unencrypted PKCS#8 PEM; written only to a new 0600 file.
    func pem() throws(SigningError) -> [UInt8] {
        try withMemoryBIO { bio in PEM_write_bio_PrivateKey(bio, key, nil, nil, 0, nil, nil) == 1 }
    }

    /// The 64-byte Ed25519 signature of `message` (pure Ed25519: no pre-hash).
    public func sign(_ message: [UInt8]) throws(SigningError) -> [UInt8] {
        guard let context = EVP_MD_CTX_new() else { throw .crypto(operation: "allocate a signing context") }
        defer { EVP_MD_CTX_free(context) }
        var signature = [UInt8](repeating: 0, count: 64)
        var length = signature.count
        let signed = EVP_DigestSignInit(context, nil, nil, nil, key) == 1
            && EVP_DigestSign(context, &signature, &length, message, message.count) == 1
        guard signed, length == 64 else { throw .crypto(operation: "sign") }
        return signature
    }

    public var description: String { "Ed25519 private key (public key ID \(publicKey.keyID))" }
}

/// An Ed25519 public key trusted to sign publications. Its key ID is the lowercase hex SHA-256 of its DER
/// SubjectPublicKeyInfo, what `openssl pkey -pubin -outform DER | sha256sum` prints.
public struct Ed25519PublicKey: Sendable, Hashable {
    /// The DER SubjectPublicKeyInfo (44 bytes for Ed25519).
    public let der: [UInt8]

    /// Lowercase hex SHA-256 of ``der``.
    public var keyID: String { Hex.encode(SHA256.hash(der)) }

    fileprivate init?(unchecked der: [UInt8]) {
        guard !der.isEmpty else { return nil }
        self.der = der
    }

    /// The public key in PEM text `pem` (`-----BEGIN PUBLIC KEY-----`); `source` names it in errors.
    public init(pem: [UInt8], source: String) throws(SigningError) {
        let parsed: OpaquePointer? = pem.withUnsafeBytes { bytes in
            guard let bio = BIO_new_mem_buf(bytes.baseAddress, Int32(bytes.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PUBKEY(bio, nil, nil, nil)
        }
        guard let parsed else { throw .notEd25519Key(source: source) }
        defer { EVP_PKEY_free(parsed) }
        guard EVP_PKEY_get_base_id(parsed) == seedkit_evp_pkey_ed25519() else { throw .notEd25519Key(source: source) }
        der = Self.subjectPublicKeyInfo(of: parsed)
    }

    /// PEM text of the key.
    public func pem() throws(SigningError) -> [UInt8] {
        let key = try parsed()
        defer { EVP_PKEY_free(key) }
        return try withMemoryBIO { bio in PEM_write_bio_PUBKEY(bio, key) == 1 }
    }

    /// Whether `signature` is this key's Ed25519 signature of `message`.
    public func verifies(_ signature: [UInt8], of message: [UInt8]) -> Bool {
        guard signature.count == 64, let key = try? parsed() else { return false }
        defer { EVP_PKEY_free(key) }
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        return EVP_DigestVerifyInit(context, nil, nil, nil, key) == 1
            && EVP_DigestVerify(context, signature, signature.count, message, message.count) == 1
    }

    private func parsed() throws(SigningError) -> OpaquePointer {
        let key: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_PUBKEY(nil, &cursor, buffer.count)
        }
        guard let key else { throw .crypto(operation: "decode a public key") }
        return key
    }

    fileprivate static func subjectPublicKeyInfo(of key: OpaquePointer) -> [UInt8] {
        var buffer: UnsafeMutablePointer<UInt8>?
        let length = i2d_PUBKEY(key, &buffer)
        guard length > 0, let buffer else { return [] }
        defer { CRYPTO_free(buffer, #file, #line) }
        return Array(UnsafeBufferPointer(start: buffer, count: Int(length)))
    }
}

/// Runs `write` on a fresh memory BIO and returns what it wrote.
private func withMemoryBIO(_ write: (OpaquePointer) -> Bool) throws(SigningError) -> [UInt8] {
    guard let bio = BIO_new(BIO_s_mem()) else { throw .crypto(operation: "allocate a memory buffer") }
    defer { BIO_free(bio) }
    guard write(bio) else { throw .crypto(operation: "encode a key as PEM") }
    var data: UnsafeMutablePointer<CChar>?
    let length = seedkit_bio_mem_data(bio, &data)
    guard length > 0, let data else { throw .crypto(operation: "encode a key as PEM") }
    return data.withMemoryRebound(to: UInt8.self, capacity: length) {
        Array(UnsafeBufferPointer(start: $0, count: length))
    }
}
