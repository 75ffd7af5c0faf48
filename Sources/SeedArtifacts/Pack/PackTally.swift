import SynchroProtocol

/// Byte count and SHA-256 of one side of a pack or unpack, accumulated chunk by chunk.
struct PackTally: ~Copyable {
    private(set) var bytes: Int64 = 0
    private var hasher = SHA256()

    mutating func add(_ chunk: UnsafeRawBufferPointer) {
        bytes += Int64(chunk.count)
        hasher.update(chunk)
    }

    /// Lowercase hex SHA-256 of everything added.
    consuming func sha256() -> String {
        Hex.encode(hasher.finalize())
    }
}

/// Calls a progress handler every few MiB of input, not on every chunk.
struct PackProgressMeter {
    private static let step: Int64 = 4 << 20
    private let handler: (@Sendable (PackProgress) -> Void)?
    private let total: Int64
    private var next = Self.step

    init(_ handler: (@Sendable (PackProgress) -> Void)?, total: Int64) {
        self.handler = handler
        self.total = total
    }

    mutating func advance(to processed: Int64) {
        guard let handler, processed >= next else { return }
        next = processed + Self.step
        handler(PackProgress(processedBytes: processed, totalBytes: total))
    }

    func finish(at processed: Int64) {
        handler?(PackProgress(processedBytes: processed, totalBytes: total))
    }
}

/// A fixed-size chunk of memory for one side of a stream, freed when released.
final class PackBuffer {
    let bytes: UnsafeMutableRawBufferPointer

    init(size: Int) {
        bytes = .allocate(byteCount: max(size, 1), alignment: 16)
    }

    deinit {
        bytes.deallocate()
    }

    func prefix(_ count: Int) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: bytes[..<count])
    }
}
