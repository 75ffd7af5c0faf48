/// Compressed bodies without a zlib binding: real compressed streams made once with `gzip -9n` and
/// Python's `zlib.compress(…, 9)`, and a builder that wraps any octets in uncompressed ("stored")
/// deflate blocks, which every inflater must accept.
enum ContentEncodingFixtures {
    /// The plain text of the two compressed literals: `{"value":"synchro synchro … "}`, 8,012 octets.
    static let repetitivePlainText = Array(("{\"value\":\"" + String(repeating: "synchro ", count: 1000) + "\"}").utf8)

    /// `repetitivePlainText` compressed by `gzip -9n` (72 octets).
    static let repetitiveGzip = hex(
        "1f8b0800000000000203edc5d10980201400c055e28dd13612811fa2901848b4bb8378f7735fbca98c3bcee8b35ef969876ddb"
            + "b66ddbb66ddbb66ddb3b1fff02a75b6ee64c1f0000")

    /// `repetitivePlainText` compressed by `zlib.compress(…, 9)`: the zlib format HTTP calls `deflate`.
    static let repetitiveDeflate = hex(
        "78daedc5d10980201400c055e28dd13612811fa2901848b4bb8378f7735fbca98c3bcee8b35ef969876ddbb66ddbb66ddbb66d"
            + "db3b1fff02df9850fc")

    /// A gzip member (RFC 1952) holding `data` in stored deflate blocks.
    static func storedGzip(_ data: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [0x1F, 0x8B, 0x08, 0x00, 0, 0, 0, 0, 0x00, 0xFF]
        out += storedDeflate(data)
        out += littleEndian(crc32(data))
        out += littleEndian(UInt32(truncatingIfNeeded: data.count))
        return out
    }

    private static func storedDeflate(_ data: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        var offset = 0
        repeat {
            let length = min(65_535, data.count - offset)
            let isLast = offset + length == data.count
            out.append(isLast ? 0x01 : 0x00)
            out += [UInt8(length & 0xFF), UInt8(length >> 8), UInt8(~length & 0xFF), UInt8((~length >> 8) & 0xFF)]
            out += data[offset..<(offset + length)]
            offset += length
        } while offset < data.count
        return out
    }

    private static func crc32(_ data: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in data {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }

    private static func littleEndian(_ value: UInt32) -> [UInt8] {
        (0..<4).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) }
    }

    private static func hex(_ text: String) -> [UInt8] {
        let digits = Array(text.utf8).map { $0 <= 0x39 ? $0 - 0x30 : $0 - 0x61 + 10 }
        return stride(from: 0, to: digits.count, by: 2).map { digits[$0] << 4 | digits[$0 + 1] }
    }
}
