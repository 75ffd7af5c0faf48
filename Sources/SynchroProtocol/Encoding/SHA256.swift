import CCrypto

/// Streaming SHA-256 over OpenSSL's implementation (the same code the benchmark baseline uses).
public struct SHA256: ~Copyable, Sendable {
    private var context = SHA256_CTX()

    public init() {
        SHA256_Init(&context)
    }

    public mutating func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { update($0) }
    }

    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        SHA256_Update(&context, base, bytes.count)
    }

    public mutating func update(_ bytes: ArraySlice<UInt8>) {
        bytes.withUnsafeBytes { update($0) }
    }

    /// The 32-octet digest; the hasher is consumed.
    public consuming func finalize() -> [UInt8] {
        Self.final(&context)
    }

    /// SHA-256 of one buffer.
    public static func hash(_ bytes: [UInt8]) -> [UInt8] {
        var hasher = SHA256()
        hasher.update(bytes)
        return hasher.finalize()
    }

    /// SHA-256 of octets in unmanaged memory.
    ///
    /// Through the low-level context rather than OpenSSL 3's one-shot `SHA256()`: the one-shot
    /// fetches the algorithm from the provider registry (a read-write lock round trip) per call.
    static func hash(_ bytes: UnsafeBufferPointer<UInt8>) -> [UInt8] {
        var context = SHA256_CTX()
        SHA256_Init(&context)
        if let base = bytes.baseAddress { SHA256_Update(&context, base, bytes.count) }
        return final(&context)
    }

    /// SHA-256 of octets in unmanaged memory, written to the 32 octets at `digest`.
    static func hash(_ bytes: UnsafeBufferPointer<UInt8>, into digest: UnsafeMutablePointer<UInt8>) {
        var context = SHA256_CTX()
        SHA256_Init(&context)
        if let base = bytes.baseAddress { SHA256_Update(&context, base, bytes.count) }
        _ = SHA256_Final(digest, &context)
    }

    /// Finishes `context` into 32 octets on the stack, then copies them into the returned array: the array
    /// initializers that write in place (`unsafeUninitializedCapacity`, `repeating:count:`) reach an unspecialized
    /// allocation in the standard library that looks up `Array<UInt8>`'s metadata on every call, which cost more
    /// than all the other per-row work of a row digest but SHA-256 itself.
    @inline(__always)
    private static func final(_ context: inout SHA256_CTX) -> [UInt8] {
        var digest: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        return withUnsafeMutableBytes(of: &digest) { raw in
            _ = SHA256_Final(raw.baseAddress?.assumingMemoryBound(to: UInt8.self), &context)
            return Array(UnsafeRawBufferPointer(raw))
        }
    }
}
