/// Builds the octet strings of the integrity grammar (`spec/integrity.md` §4.1).
public struct OctetWriter: Sendable {
    public private(set) var bytes: [UInt8]

    public init(capacity: Int = 64) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    /// Starts with a domain prefix: the ASCII text followed by one zero octet.
    public init(domain: String, capacity: Int = 64) {
        self.init(capacity: capacity)
        appendDomain(domain)
    }

    public mutating func appendDomain(_ ascii: String) {
        bytes.append(contentsOf: ascii.utf8)
        bytes.append(0)
    }

    /// Number of octets written so far; marks where a length prefix or a slice starts.
    public var count: Int { bytes.count }

    /// Empties the writer but keeps its storage, so a hot loop reuses one allocation.
    public mutating func removeAll() { bytes.removeAll(keepingCapacity: true) }

    /// Overwrites the 8 octets at `offset` with `u64be(v)`: fills a length prefix reserved before
    /// the length of what follows was known.
    public mutating func setU64BE(_ v: UInt64, at offset: Int) {
        precondition(offset >= 0 && offset + 8 <= bytes.count, "length prefix outside the written octets")
        for i in 0..<8 { bytes[offset + i] = UInt8(truncatingIfNeeded: v >> UInt64(56 - 8 * i)) }
    }

    public mutating func append(_ byte: UInt8) { bytes.append(byte) }
    public mutating func append(_ octets: [UInt8]) { bytes.append(contentsOf: octets) }

    /// Appends octets held in unmanaged memory (a ``RawOctetWriter``'s, for example).
    mutating func append(_ octets: UnsafeBufferPointer<UInt8>) { bytes.append(contentsOf: octets) }

    public mutating func appendU32BE(_ v: UInt32) {
        withUnsafeBytes(of: v.bigEndian) { bytes.append(contentsOf: $0) }
    }

    public mutating func appendU64BE(_ v: UInt64) {
        withUnsafeBytes(of: v.bigEndian) { bytes.append(contentsOf: $0) }
    }

    public mutating func appendI32BE(_ v: Int32) { appendU32BE(UInt32(bitPattern: v)) }
    public mutating func appendI64BE(_ v: Int64) { appendU64BE(UInt64(bitPattern: v)) }

    /// `blob(b) = u64be(length) || b`.
    public mutating func appendBlob(_ octets: [UInt8]) {
        appendU64BE(UInt64(octets.count))
        bytes.append(contentsOf: octets)
    }

    /// `text(s) = blob(UTF-8(s))`, without normalization.
    public mutating func appendText(_ s: String) {
        var s = s
        let handled: Void? = s.withUTF8 { utf8 in
            appendU64BE(UInt64(utf8.count))
            bytes.append(contentsOf: utf8)
        }
        _ = handled
    }
}
