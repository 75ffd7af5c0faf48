import SystemKit

/// Streaming zstd packing of seed databases (`seed.db` ⇄ `seed.db.zst`), with bounded memory whatever
/// the file size.
///
/// A packed seed is exactly one zstd frame that records its content size and ends with a content
/// checksum. Unpacking refuses anything else — another format, a frame without checksum, damage,
/// truncation, bytes after the frame — and refuses to produce more than a limit, checked against the
/// declared size before anything is written and against the bytes produced while decoding. Outputs are
/// published atomically: an error never leaves a partial file at the destination.
public enum SeedPacker {
    /// True when the file at `path` is a regular file that begins with the zstd frame magic `28 B5 2F FD`.
    public static func isZstdFrame(path: String) -> Bool {
        guard let input = try? PackInputFile(path: path) else { return false }
        let buffer = PackBuffer(size: ZstdFrameHeader.magic.count)
        guard let count = try? input.read(into: buffer.bytes) else { return false }
        return ZstdFrameHeader.hasMagic(buffer.prefix(count))
    }

    /// Compresses the regular file at `input` into one zstd frame at `output`.
    ///
    /// The frame records the content size and a content checksum. The input is read in fixed chunks and
    /// compressed by ``PackOptions/workers`` threads; the output is written beside `output` and published
    /// only once complete and synced.
    public static func pack(
        _ input: String, to output: String, options: PackOptions = PackOptions()
    ) throws(PackError) -> PackReport {
        let options = try options.validated()
        try refuseSidecars(of: input)
        let source = try PackInputFile(path: input)
        let size = source.size
        let reference = try options.patchFrom.map { path throws(PackError) in try MappedFile(path: path) }
        let compressor = try ZstdCompressor(
            level: options.level, workers: options.workers, pledgedSize: size, reference: reference)
        defer { withExtendedLifetime(reference) {} }
        let destination = try outputFile(output, overwrite: options.overwrite)
        do throws(PackError) {
            var stream = PackStream(source: source, destination: destination, limit: options.maximumOutputBytes)
            var meter = PackProgressMeter(options.progress, total: size)
            try stream.compress(with: compressor, expectedSize: size, meter: &meter)
            try publish(destination)
            meter.finish(at: stream.input.bytes)
            return PackReport(
                uncompressedBytes: stream.input.bytes, compressedBytes: stream.output.bytes,
                uncompressedSHA256: stream.input.sha256(), compressedSHA256: stream.output.sha256(),
                level: options.level)
        } catch {
            destination.discard()
            throw error
        }
    }

    /// Decompresses the single zstd frame in the regular file at `input` into `output`.
    ///
    /// Refused before anything is written: a file that is not a zstd frame, a frame without content
    /// checksum, a declared content size over ``UnpackOptions/maximumOutputBytes``. Refused while
    /// decoding, with the partial output removed: damage, a checksum mismatch, truncation, bytes after
    /// the frame, more output than the limit.
    public static func unpack(
        _ input: String, to output: String, options: UnpackOptions = UnpackOptions()
    ) throws(PackError) -> PackReport {
        let options = try options.validated()
        try refuseSidecars(of: output)
        let source = try PackInputFile(path: input)
        let reference = try options.patchFrom.map { path throws(PackError) in try MappedFile(path: path) }
        let decompressor = try ZstdDecompressor(reference: reference)
        defer { withExtendedLifetime(reference) {} }
        let prelude = try UnpackPrelude(source: source, limit: options.maximumOutputBytes)
        let destination = try outputFile(output, overwrite: options.overwrite)
        do throws(PackError) {
            var stream = PackStream(
                source: source, destination: destination, limit: options.maximumOutputBytes,
                requireSQLite: options.requireSQLiteDatabase)
            var meter = PackProgressMeter(options.progress, total: source.size)
            try stream.decompress(with: decompressor, prelude: prelude, meter: &meter)
            let (inputBytes, outputBytes) = (stream.input.bytes, stream.output.bytes)
            let digests = stream.digests()
            if let expected = options.expectedSHA256, expected != digests.output {
                throw .digestMismatch(expected: expected)
            }
            try publish(destination)
            meter.finish(at: inputBytes)
            return PackReport(
                uncompressedBytes: outputBytes, compressedBytes: inputBytes,
                uncompressedSHA256: digests.output, compressedSHA256: digests.input, level: nil)
        } catch {
            destination.discard()
            throw error
        }
    }

    /// A hidden temporary file beside `output` (``DurableFile``): published only once complete and synced.
    private static func outputFile(_ output: String, overwrite: Bool) throws(PackError) -> DurableFile {
        do {
            return try DurableFile(destination: output, replacing: overwrite)
        } catch {
            throw PackError(error)
        }
    }

    private static func publish(_ file: DurableFile) throws(PackError) {
        do {
            try file.publish()
        } catch {
            throw PackError(error)
        }
    }

    /// A seed travels without sidecars (`spec/seed-format.md`): one beside the packed database would
    /// mean its bytes are not the whole database, one beside the unpacked database would be applied to it.
    private static func refuseSidecars(of database: String) throws(PackError) {
        for suffix in ["-wal", "-shm", "-journal"] where FileSystem.exists(database + suffix) {
            throw .sidecarPresent(path: database + suffix)
        }
    }
}
