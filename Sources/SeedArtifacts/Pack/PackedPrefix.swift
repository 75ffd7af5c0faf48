import CZstd
import Foundation

/// The first bytes a zstd frame decodes to, without decoding the rest: enough to tell which kind of database a
/// packed seed holds (a delta seed's bookkeeping tables are the first pages of its file) before choosing the checks
/// that unpack it in full. A damaged frame is simply "no prefix"; the full unpack reports its error.
package enum PackedPrefix {
    /// Up to `count` decoded bytes of the frame at `path`, nil when it is not a readable zstd frame.
    package static func bytes(of path: String, count: Int) -> [UInt8]? {
        guard let source = try? PackInputFile(path: path), let decompressor = try? ZstdDecompressor() else {
            return nil
        }
        let input = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 17, alignment: 16)
        defer { input.deallocate() }
        var output = [UInt8](repeating: 0, count: count)
        var produced = 0
        while produced < count {
            guard let read = try? source.read(into: input), read > 0 else { break }
            var inBuffer = ZSTD_inBuffer(src: input.baseAddress, size: read, pos: 0)
            while inBuffer.pos < inBuffer.size && produced < count {
                let step: Int? = output.withUnsafeMutableBytes { raw in
                    var outBuffer = ZSTD_outBuffer(dst: raw.baseAddress! + produced, size: count - produced, pos: 0)
                    guard (try? decompressor.decompress(&outBuffer, &inBuffer)) != nil else { return nil }
                    return outBuffer.pos
                }
                guard let step else { return produced > 0 ? Array(output.prefix(produced)) : nil }
                produced += step
            }
        }
        return produced > 0 ? Array(output.prefix(produced)) : nil
    }
}
