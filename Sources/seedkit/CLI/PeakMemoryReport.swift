#if canImport(Glibc)
import Glibc
#endif

/// The process's own peak memory, for benchmarks: with `SEEDKIT_PEAK_MEMORY_FILE` set, `seedkit` writes the
/// high-water mark of its resident set (`VmHWM` of /proc/self/status, in octets, as decimal text) to that file when
/// it exits.
///
/// A parent cannot read this figure from outside: `ru_maxrss` of a child takes, at `exec`, the high-water mark of
/// the address space it replaces, which for a `posix_spawn`ed or forked child is the parent's (a benchmark that had
/// grown to 660 MB reported 660 MB for every command it started), and once the child has exited its /proc entry no
/// longer has an address space to report. The exiting process itself still has both.
enum PeakMemoryReport {
    static let variable = "SEEDKIT_PEAK_MEMORY_FILE"

    /// Registers the report when the variable is set; otherwise does nothing.
    static func installIfRequested() {
        guard getenv(variable) != nil else { return }
        atexit { PeakMemoryReport.write() }
    }

    private static func write() {
        guard let path = getenv(variable), let peak = highWaterBytes() else { return }
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        let text = Array("\(peak)\n".utf8)
        _ = text.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
    }

    /// `VmHWM` of /proc/self/status in octets; nil when it cannot be read.
    static func highWaterBytes() -> Int? {
        let descriptor = open("/proc/self/status", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: 8192)
        let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        guard count > 0 else { return nil }
        for line in String(decoding: buffer[..<count], as: UTF8.self).split(separator: "\n")
        where line.hasPrefix("VmHWM:") {
            let fields = line.split { $0 == " " || $0 == "\t" }
            if fields.count >= 2, let kilobytes = Int(fields[1]) { return kilobytes * 1024 }
        }
        return nil
    }
}
