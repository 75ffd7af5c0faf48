import CZstd
import SystemKit

/// One pass from an input file through libzstd into an atomic output, with fixed-size buffers: the
/// memory used does not depend on the file size. Both sides are counted and hashed as they stream.
struct PackStream: ~Copyable {
    /// The uncompressed side moves in chunks of at least 1 MiB (libzstd suggests 128 KiB): fewer system
    /// calls and fewer hand-offs to the compression workers, for 1 MiB more memory.
    static let uncompressedChunkSize = 1 << 20

    let source: PackInputFile
    let destination: DurableFile
    let limit: Int64
    var input = PackTally()
    var output = PackTally()
    /// For a packed seed: the SQLite header, checked before any output is written (nil: any content).
    var gate: SQLiteHeaderGate?

    init(source: PackInputFile, destination: DurableFile, limit: Int64, requireSQLite: Bool = false) {
        self.source = source
        self.destination = destination
        self.limit = limit
        gate = requireSQLite ? SQLiteHeaderGate() : nil
    }

    /// Reads the whole input and writes one complete frame; the input must still be `expectedSize`
    /// bytes long, the size pledged in the frame header.
    mutating func compress(
        with compressor: ZstdCompressor, expectedSize: Int64, meter: inout PackProgressMeter
    ) throws(PackError) {
        let chunk = PackBuffer(size: max(ZSTD_CStreamInSize(), Self.uncompressedChunkSize))
        let sink = PackBuffer(size: ZSTD_CStreamOutSize())
        var last = false
        while !last {
            let count = try source.read(into: chunk.bytes)
            last = count < chunk.bytes.count
            input.add(chunk.prefix(count))
            guard input.bytes <= expectedSize, !last || input.bytes == expectedSize else {
                throw .inputChanged(path: source.path)
            }
            var pending = ZSTD_inBuffer(src: chunk.bytes.baseAddress, size: count, pos: 0)
            var flushed = false
            while !flushed {
                var produced = ZSTD_outBuffer(dst: sink.bytes.baseAddress, size: sink.bytes.count, pos: 0)
                let remaining = try compressor.compress(&produced, &pending, end: last)
                try emit(sink.prefix(produced.pos))
                flushed = last ? remaining == 0 : pending.pos == pending.size
            }
            meter.advance(to: input.bytes)
        }
    }

    /// Decodes exactly one frame, starting with the chunk the prelude already read, and requires the
    /// input to end where the frame ends.
    mutating func decompress(
        with decompressor: ZstdDecompressor, prelude: UnpackPrelude, meter: inout PackProgressMeter
    ) throws(PackError) {
        let chunk = prelude.buffer
        let sink = PackBuffer(size: max(ZSTD_DStreamOutSize(), Self.uncompressedChunkSize))
        var count = prelude.count
        input.add(chunk.prefix(count))
        while true {
            var pending = ZSTD_inBuffer(src: chunk.bytes.baseAddress, size: count, pos: 0)
            var sinkFull = false
            repeat {
                var produced = ZSTD_outBuffer(dst: sink.bytes.baseAddress, size: sink.bytes.count, pos: 0)
                let remaining = try decompressor.decompress(&produced, &pending)
                try emit(sink.prefix(produced.pos))
                if remaining == 0 {
                    // The frame is decoded, checksum included; nothing may follow it.
                    guard pending.pos == pending.size, try source.read(into: chunk.bytes) == 0 else {
                        throw .trailingData
                    }
                    if let gate, !gate.isOpen {
                        throw .notSQLiteDatabase(reason: "the content is shorter than a SQLite header")
                    }
                    return
                }
                sinkFull = produced.pos == produced.size
            } while pending.pos < pending.size || sinkFull
            meter.advance(to: input.bytes)
            count = try source.read(into: chunk.bytes)
            guard count > 0 else { throw .truncated }
            input.add(chunk.prefix(count))
        }
    }

    /// Lowercase hex SHA-256 of both sides, once the stream is done.
    consuming func digests() -> (input: String, output: String) {
        (input.sha256(), output.sha256())
    }

    /// Checks the limit before any byte beyond it is written, then writes and tallies `bytes`. A packed seed's
    /// first 100 bytes are held back until its header is checked, and its declared size is a second limit.
    private mutating func emit(_ bytes: UnsafeRawBufferPointer) throws(PackError) {
        guard !bytes.isEmpty else { return }
        var bytes = bytes
        if var pending = gate, !pending.isOpen {
            let taken = try pending.take(bytes)
            gate = pending
            bytes = UnsafeRawBufferPointer(rebasing: bytes[taken...])
            guard let declared = pending.declaredBytes else { return }
            if declared < Int64(SeedFileProbe.headerBytes) { throw .exceedsDeclaredDatabaseSize(declared: declared) }
            var failure: PackError?
            pending.header.withUnsafeBytes { header in
                do throws(PackError) { try write(header) } catch { failure = error }
            }
            if let failure { throw failure }
        }
        if let declared = gate?.declaredBytes, Int64(bytes.count) > declared - output.bytes {
            throw .exceedsDeclaredDatabaseSize(declared: declared)
        }
        try write(bytes)
    }

    private mutating func write(_ bytes: UnsafeRawBufferPointer) throws(PackError) {
        guard !bytes.isEmpty else { return }
        guard Int64(bytes.count) <= limit - output.bytes else { throw .outputLimitExceeded(limit: limit) }
        output.add(bytes)
        do {
            try destination.write(bytes)
        } catch {
            throw PackError(error)
        }
    }
}

/// The first chunk of a packed seed, read and judged before any output file exists: the zstd magic,
/// a well-formed header, a content checksum, and a declared size within the limit.
struct UnpackPrelude {
    /// The input buffer, holding the first `count` bytes of the file.
    let buffer: PackBuffer
    let count: Int
    let header: ZstdFrameHeader

    init(source: PackInputFile, limit: Int64) throws(PackError) {
        buffer = PackBuffer(size: ZSTD_DStreamInSize())
        count = try source.read(into: buffer.bytes)
        header = try ZstdFrameHeader(prefix: buffer.prefix(count), path: source.path)
        if let declared = header.declaredContentSize, declared > UInt64(limit) {
            throw .declaredSizeExceedsLimit(declared: declared, limit: limit)
        }
        guard header.hasContentChecksum else { throw .missingContentChecksum }
    }
}
