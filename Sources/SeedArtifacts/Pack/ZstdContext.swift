import CZstd

/// A libzstd streaming compression context configured for a seed: content checksum, recorded content
/// size, and worker threads when the library was built with them.
final class ZstdCompressor {
    private let context: OpaquePointer

    /// With a `reference` (the previous seed), the frame is a patch: the reference is its prefix, long-distance
    /// matching finds the unchanged pages wherever they moved, and the window covers reference and content, capped
    /// at ``ZstdDecompressor/windowLogMaximum`` so a patch never needs more memory than `unpack` allows.
    init(level: Int32, workers: Int, pledgedSize: Int64, reference: MappedFile? = nil) throws(PackError) {
        guard let context = ZSTD_createCCtx() else { throw .compressionFailed("cannot allocate a context") }
        self.context = context
        try Self.check(ZSTD_CCtx_setParameter(context, ZSTD_c_compressionLevel, level))
        try Self.check(ZSTD_CCtx_setParameter(context, ZSTD_c_checksumFlag, 1))
        try Self.check(ZSTD_CCtx_setParameter(context, ZSTD_c_contentSizeFlag, 1))
        // A library built without threads refuses any worker count: it then compresses in this thread.
        _ = ZSTD_CCtx_setParameter(context, ZSTD_c_nbWorkers, Int32(workers))
        try Self.check(ZSTD_CCtx_setPledgedSrcSize(context, UInt64(pledgedSize)))
        if let reference, reference.bytes.count > 0 {
            let span = UInt64(max(reference.bytes.count, Int(pledgedSize)))
            let needed = Int32(64 - (span | 1).leadingZeroBitCount) + 1
            let windowLog = min(max(needed, 10), ZstdDecompressor.windowLogMaximum)
            try Self.check(ZSTD_CCtx_setParameter(context, ZSTD_c_windowLog, windowLog))
            try Self.check(ZSTD_CCtx_setParameter(context, ZSTD_c_enableLongDistanceMatching, 1))
            try Self.check(ZSTD_CCtx_refPrefix(context, reference.bytes.baseAddress, reference.bytes.count))
        }
    }

    deinit {
        ZSTD_freeCCtx(context)
    }

    /// One `ZSTD_compressStream2` step; returns how many bytes are still to be flushed (0 once the frame is
    /// complete after `end`).
    func compress(_ sink: inout ZSTD_outBuffer, _ source: inout ZSTD_inBuffer, end: Bool) throws(PackError) -> Int {
        let result = ZSTD_compressStream2(context, &sink, &source, end ? ZSTD_e_end : ZSTD_e_continue)
        try Self.check(result)
        return result
    }

    private static func check(_ result: Int) throws(PackError) {
        if let code = ZstdCode(result) { throw .compressionFailed(code.name) }
    }
}

/// A libzstd streaming decompression context whose window is capped, so memory stays bounded
/// whatever a frame asks for.
final class ZstdDecompressor {
    /// 2^27 bytes (128 MiB), libzstd's default cap and enough for every level up to 22.
    static let windowLogMaximum: Int32 = 27

    private let context: OpaquePointer

    /// With a `reference`, the frame is decoded as a patch against it (the same prefix the compressor used).
    init(reference: MappedFile? = nil) throws(PackError) {
        guard let context = ZSTD_createDCtx() else { throw .corrupt("cannot allocate a context") }
        self.context = context
        if let code = ZstdCode(ZSTD_DCtx_setParameter(context, ZSTD_d_windowLogMax, Self.windowLogMaximum)) {
            throw .corrupt(code.name)
        }
        if let reference, reference.bytes.count > 0,
           let code = ZstdCode(ZSTD_DCtx_refPrefix(context, reference.bytes.baseAddress, reference.bytes.count)) {
            throw .corrupt(code.name)
        }
    }

    deinit {
        ZSTD_freeDCtx(context)
    }

    /// One `ZSTD_decompressStream` step; returns 0 once the frame is decoded and fully flushed.
    func decompress(_ sink: inout ZSTD_outBuffer, _ source: inout ZSTD_inBuffer) throws(PackError) -> Int {
        let result = ZSTD_decompressStream(context, &sink, &source)
        guard let code = ZstdCode(result) else { return result }
        switch code.value {
        case ZstdCode.checksumWrong: throw .checksumMismatch
        case ZstdCode.windowTooLarge: throw .windowTooLarge
        default: throw .corrupt(code.name)
        }
    }
}

/// The error carried by a libzstd `size_t` result. The values compared are those `zstd_errors.h` declares
/// stable (below 100); that header is not part of the module map.
struct ZstdCode {
    static let windowTooLarge = 16
    static let checksumWrong = 22

    let value: Int
    let name: String

    /// Nil when `result` is not an error.
    init?(_ result: Int) {
        guard ZSTD_isError(result) != 0 else { return nil }
        value = 0 &- result
        name = String(cString: ZSTD_getErrorName(result))
    }
}
