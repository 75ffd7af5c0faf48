import SynchroProtocol

/// Reads stored checksum texts without allocating on the common path: a ChecksumObject JSON
/// (`spec/integrity.md` §4.7; any member order) or a bare 64-hex edge digest.
///
/// The two spellings writers use — RFC 8785 member order and the Go exporter's struct order — are recognized
/// byte for byte; any other text goes through the strict parser and ``Checksum/init(json:)``, so exactly the
/// texts a client accepts are accepted.
enum ChecksumText {
    private static let sortedPrefix = Array(#"{"algorithm":"sha256","digest":""#.utf8)
    private static let sortedSuffix = Array(#"","encoding":"hex","version":1}"#.utf8)
    private static let goPrefix = Array(#"{"algorithm":"sha256","version":1,"encoding":"hex","digest":""#.utf8)
    private static let goSuffix = Array(#""}"#.utf8)

    /// The 32 digest octets of a ChecksumObject JSON text, nil when the text is not one.
    static func objectDigest(_ text: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        if let hex = commonSpellingDigest(text) { return bareDigest(hex) }
        guard let json = try? StrictJSONParser().parse(Array(text)), let checksum = try? Checksum(json: json) else {
            return nil
        }
        return checksum.digest
    }

    /// Whether a ChecksumObject JSON text carries `digest`: true or false, nil when the text is not a checksum
    /// object. The common spellings are compared in place, without allocating.
    static func object(_ text: UnsafeBufferPointer<UInt8>, carries digest: [UInt8]) -> Bool? {
        digest.withUnsafeBufferPointer { object(text, carries: $0) }
    }

    /// ``object(_:carries:)-([UInt8])`` of a digest in place.
    static func object(_ text: UnsafeBufferPointer<UInt8>, carries digest: UnsafeBufferPointer<UInt8>) -> Bool? {
        if let hex = commonSpellingDigest(text) {
            if bareHex(hex, equals: digest) { return true }
            return bareDigest(hex) == nil ? nil : false
        }
        return objectDigest(text).map { $0.elementsEqual(digest) }
    }

    /// The 64 characters between the digest quotes when `text` has the shape of one of the two common spellings.
    private static func commonSpellingDigest(_ text: UnsafeBufferPointer<UInt8>) -> UnsafeBufferPointer<UInt8>? {
        if let hex = digest(in: text, prefix: sortedPrefix, suffix: sortedSuffix) { return hex }
        return digest(in: text, prefix: goPrefix, suffix: goSuffix)
    }

    private static func digest(
        in text: UnsafeBufferPointer<UInt8>, prefix: [UInt8], suffix: [UInt8]
    ) -> UnsafeBufferPointer<UInt8>? {
        guard text.count == prefix.count + 64 + suffix.count, text.starts(with: prefix),
              text.suffix(suffix.count).elementsEqual(suffix)
        else { return nil }
        return UnsafeBufferPointer(rebasing: text[prefix.count..<(prefix.count + 64)])
    }

    /// ``objectDigest(_:)-(UnsafeBufferPointer<UInt8>)`` of a Swift string.
    static func objectDigest(_ text: String) -> [UInt8]? {
        var text = text
        return text.withUTF8 { objectDigest($0) }
    }

    /// The 32 octets of exactly 64 lowercase hex characters, nil otherwise.
    static func bareDigest(_ text: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        guard text.count == 64 else { return nil }
        var digest = [UInt8](repeating: 0, count: 32)
        for i in 0..<32 {
            guard let high = nibble(text[2 * i]), let low = nibble(text[2 * i + 1]) else { return nil }
            digest[i] = high << 4 | low
        }
        return digest
    }

    /// Whether exactly 64 lowercase hex characters spell `digest` (compared by spelling the digest, which is
    /// cheaper than parsing the text).
    static func bareHex(_ text: UnsafeBufferPointer<UInt8>, equals digest: [UInt8]) -> Bool {
        digest.withUnsafeBufferPointer { bareHex(text, equals: $0) }
    }

    /// ``bareHex(_:equals:)-([UInt8])`` of a digest in place.
    static func bareHex(_ text: UnsafeBufferPointer<UInt8>, equals octets: UnsafeBufferPointer<UInt8>) -> Bool {
        guard text.count == 64, octets.count == 32 else { return false }
        var i = 0
        while i < 32 {
            let octet = octets[i]
            guard text[2 * i] == hexDigit(octet >> 4), text[2 * i + 1] == hexDigit(octet & 0x0F) else {
                return false
            }
            i += 1
        }
        return true
    }

    /// The lowercase hex digit of a nibble.
    @inline(__always)
    private static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") &+ nibble : UInt8(ascii: "a") &- 10 &+ nibble
    }

    @inline(__always)
    private static func nibble(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte &- UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte &- UInt8(ascii: "a") &+ 10
        default: nil
        }
    }
}
