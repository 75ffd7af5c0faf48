import CZstd

/// What the header of a zstd frame promises (RFC 8878 §3.1.1.1), read before anything is decompressed
/// or written: whether the content is checksummed and how large it says it is.
struct ZstdFrameHeader: Equatable {
    /// `28 B5 2F FD`, the little-endian frame magic 0xFD2FB528.
    static let magic: [UInt8] = [0x28, 0xB5, 0x2F, 0xFD]
    /// `ZSTD_FRAMEHEADERSIZE_MAX`: magic, descriptor, window, dictionary ID and content size at most.
    static let maximumSize = 18

    /// The content size the frame records, or nil when it was not pledged.
    let declaredContentSize: UInt64?
    /// The frame ends with the low 32 bits of the content's XXH64.
    let hasContentChecksum: Bool

    /// Parses the header at the start of `prefix`, the first bytes of `path`; a prefix shorter than
    /// the header it announces is a truncated frame.
    init(prefix: UnsafeRawBufferPointer, path: String) throws(PackError) {
        guard Self.hasMagic(prefix) else { throw .notZstd(path: path) }
        guard prefix.count > Self.magic.count else { throw .truncated }
        let descriptor = prefix[Self.magic.count]
        guard prefix.count >= Self.size(descriptor: descriptor) else { throw .truncated }
        let size = ZSTD_getFrameContentSize(prefix.baseAddress, prefix.count)
        switch size {
        case Self.contentSizeError: throw .corrupt("invalid frame header")
        case Self.contentSizeUnknown: declaredContentSize = nil
        default: declaredContentSize = UInt64(size)
        }
        hasContentChecksum = descriptor & 0b0000_0100 != 0
    }

    static func hasMagic(_ bytes: UnsafeRawBufferPointer) -> Bool {
        bytes.count >= magic.count && zip(bytes, magic).allSatisfy { $0 == $1 }
    }

    /// `ZSTD_CONTENTSIZE_UNKNOWN` and `ZSTD_CONTENTSIZE_ERROR` (macros Swift does not import).
    private static let contentSizeUnknown: UInt64 = .max
    private static let contentSizeError: UInt64 = .max - 1

    /// Header length announced by the frame header descriptor: magic, descriptor, window descriptor
    /// unless single-segment, dictionary ID (0/1/2/4 bytes), content size (0 or 1/2/4/8 bytes).
    private static func size(descriptor: UInt8) -> Int {
        let singleSegment = descriptor & 0b0010_0000 != 0
        let dictionaryIDBytes = [0, 1, 2, 4][Int(descriptor & 0b11)]
        let contentSizeBytes = [singleSegment ? 1 : 0, 2, 4, 8][Int(descriptor >> 6)]
        return magic.count + 1 + (singleSegment ? 0 : 1) + dictionaryIDBytes + contentSizeBytes
    }
}
