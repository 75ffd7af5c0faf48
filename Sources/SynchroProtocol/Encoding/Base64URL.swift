/// RFC 4648 §5 base64url without padding, canonical only: the `bytes` value form and the token
/// segment encoding of the protocol.
public enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Unpadded base64url of `bytes`.
    public static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count * 4 + 2) / 3)
        var i = 0
        while i + 3 <= bytes.count {
            let v = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
            out.append(alphabet[Int(v >> 18 & 63)])
            out.append(alphabet[Int(v >> 12 & 63)])
            out.append(alphabet[Int(v >> 6 & 63)])
            out.append(alphabet[Int(v & 63)])
            i += 3
        }
        let rest = bytes.count - i
        if rest == 1 {
            let v = UInt32(bytes[i]) << 16
            out.append(alphabet[Int(v >> 18 & 63)])
            out.append(alphabet[Int(v >> 12 & 63)])
        } else if rest == 2 {
            let v = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8
            out.append(alphabet[Int(v >> 18 & 63)])
            out.append(alphabet[Int(v >> 12 & 63)])
            out.append(alphabet[Int(v >> 6 & 63)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes canonical unpadded base64url; nil for padding, a character outside the alphabet,
    /// a length of 1 mod 4, or nonzero unused trailing bits (so re-encoding gives the same text).
    public static func decode(_ text: String) -> [UInt8]? {
        if let decoded = text.utf8.withContiguousStorageIfAvailable({ decode($0) }) { return decoded }
        return Array(text.utf8).withUnsafeBufferPointer { decode($0) }
    }

    private static func decode(_ chars: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        guard let count = decodedCount(chars.count) else { return nil }
        guard count > 0 else { return [] }
        var valid = false
        let out = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            valid = decode(chars, into: buffer.baseAddress.unsafelyUnwrapped)
            initialized = valid ? count : 0
        }
        return valid ? out : nil
    }

    /// The number of octets `length` base64url characters decode to; nil for a length of 1 mod 4,
    /// which no octet string encodes to.
    @inline(__always)
    static func decodedCount(_ length: Int) -> Int? {
        let rest = length & 3
        guard rest != 1 else { return nil }
        return (length >> 2) * 3 + (rest == 0 ? 0 : rest - 1)
    }

    /// Decodes `chars` into `out`, which has room for `decodedCount(chars.count)` octets; false
    /// (with `out` partly written) for anything ``decode(_:)`` rejects. Four characters at a time,
    /// one table lookup each: this runs for every `bytes` value of every row digest.
    static func decode(_ chars: UnsafeBufferPointer<UInt8>, into out: UnsafeMutablePointer<UInt8>) -> Bool {
        guard chars.count & 3 != 1 else { return false }
        return decodeTable.withUnsafeBufferPointer { table -> Bool in
            var i = 0
            var o = 0
            let fullGroupsEnd = chars.count & ~3
            while i < fullGroupsEnd {
                let a = table[Int(chars[i])], b = table[Int(chars[i &+ 1])]
                let c = table[Int(chars[i &+ 2])], d = table[Int(chars[i &+ 3])]
                guard (a | b | c | d) & 0x80 == 0 else { return false }
                let v = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6 | UInt32(d)
                out[o] = UInt8(truncatingIfNeeded: v >> 16)
                out[o &+ 1] = UInt8(truncatingIfNeeded: v >> 8)
                out[o &+ 2] = UInt8(truncatingIfNeeded: v)
                i &+= 4
                o &+= 3
            }
            switch chars.count &- i {
            case 2:
                let a = table[Int(chars[i])], b = table[Int(chars[i &+ 1])]
                // The low four bits of the last character are unused and must be zero.
                guard (a | b) & 0x80 == 0, b & 0x0F == 0 else { return false }
                out[o] = a << 2 | b >> 4
            case 3:
                let a = table[Int(chars[i])], b = table[Int(chars[i &+ 1])], c = table[Int(chars[i &+ 2])]
                // The low two bits of the last character are unused and must be zero.
                guard (a | b | c) & 0x80 == 0, c & 0x03 == 0 else { return false }
                out[o] = a << 2 | b >> 4
                out[o &+ 1] = (b & 0x0F) << 4 | c >> 2
            default:
                break
            }
            return true
        }
    }

    /// Sextet value of each octet, 0xFF for octets outside the base64url alphabet.
    private static let decodeTable: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (value, char) in alphabet.enumerated() { table[Int(char)] = UInt8(value) }
        return table
    }()
}
