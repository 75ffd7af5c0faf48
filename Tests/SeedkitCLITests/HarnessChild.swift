import Foundation
import Glibc
import SynchroProtocol
import _SeedkitTestSupport

/// When the crash harness kills a child `seedkit` run (docs/reliability.md). No trigger waits for time: each one
/// counts something the child visibly did, so "a random moment" is a random point in the child's own progress.
enum HarnessTrigger: Sendable {
    /// Never: the run ends by itself (a `SEEDKIT_CRASH_AT` boundary may still kill it).
    case none
    /// After the child printed this many complete lines on standard output (its `--json` event stream).
    case lines(Int)
    /// After this many file system events (create, write, rename, delete) in `directory` and the directories
    /// created in it while the child runs.
    case fileEvents(directory: String, count: Int)
}

/// How one child run ended.
struct HarnessOutcome {
    /// The exit status, or the signal number when `signaled`.
    let status: Int32
    let signaled: Bool
    /// True when the harness sent the SIGKILL (a crash point kills the child by itself).
    let killedByHarness: Bool
    /// True when the trigger fired and the harness sent its signal (whatever the child then did with it).
    let signalSent: Bool
    let stdout: [UInt8]
    let stderr: [UInt8]
    /// File system events seen in the watched directories.
    let fileEvents: Int

    var killed: Bool { signaled && status == SIGKILL }
    var succeeded: Bool { !signaled && status == 0 }
    var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
    var stderrText: String { String(decoding: stderr, as: UTF8.self) }
    var lines: [String] { stdoutText.split(separator: "\n").map(String.init) }
}

/// Runs the built `seedkit` and kills it with SIGKILL (or sends `signal`) when its trigger fires. Standard output and error and the
/// inotify descriptor are read from one `poll` loop, which ends when both pipes reach end of file.
enum HarnessChild {
    static func run(
        _ arguments: [String], environment: [String: String] = [:], trigger: HarnessTrigger = .none,
        signal: Int32 = SIGKILL
    ) throws -> HarnessOutcome {
        let watcher = try trigger.directory.map { try DirectoryWatcher(directory: $0) }
        defer { watcher?.close() }
        let process = Process()
        process.executableURL = SeedkitProcess.executable
        process.arguments = arguments
        var merged = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        merged.removeValue(forKey: "SEEDKIT_CRASH_AT")
        if let point = environment["SEEDKIT_CRASH_AT"], !point.isEmpty { merged["SEEDKIT_CRASH_AT"] = point }
        process.environment = merged
        let output = Pipe(), errors = Pipe()
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = output
        process.standardError = errors
        try process.run()

        var stdout: [UInt8] = [], stderr: [UInt8] = []
        var open = [output.fileHandleForReading.fileDescriptor, errors.fileHandleForReading.fileDescriptor]
        var killed = false
        var events = 0
        var newlines = 0
        var buffer = [UInt8](repeating: 0, count: 65_536)
        func fire() {
            guard !killed else { return }
            killed = true
            kill(process.processIdentifier, signal)
        }
        while !open.isEmpty {
            var descriptors = open.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            if let watcher { descriptors.append(pollfd(fd: watcher.descriptor, events: Int16(POLLIN), revents: 0)) }
            guard poll(&descriptors, nfds_t(descriptors.count), -1) >= 0 else {
                if errno == EINTR { continue }
                throw HarnessError("poll failed (errno \(errno))")
            }
            for entry in descriptors where entry.revents != 0 {
                if let watcher, entry.fd == watcher.descriptor {
                    events += watcher.drain()
                    if case .fileEvents(_, let count) = trigger, events >= count { fire() }
                    continue
                }
                let count = buffer.withUnsafeMutableBytes { read(entry.fd, $0.baseAddress, $0.count) }
                if count <= 0 {
                    if count < 0 && errno == EINTR { continue }
                    open.removeAll { $0 == entry.fd }
                } else if entry.fd == output.fileHandleForReading.fileDescriptor {
                    stdout += buffer[..<count]
                    newlines += buffer[..<count].reduce(0) { $0 + ($1 == 0x0A ? 1 : 0) }
                    if case .lines(let lines) = trigger, newlines >= lines { fire() }
                } else {
                    stderr += buffer[..<count]
                }
            }
        }
        process.waitUntilExit()
        let signaled = process.terminationReason == .uncaughtSignal
        return HarnessOutcome(
            status: process.terminationStatus, signaled: signaled,
            killedByHarness: killed && signaled && process.terminationStatus == SIGKILL, signalSent: killed,
            stdout: stdout,
            stderr: stderr, fileEvents: events)
    }
}

extension HarnessTrigger {
    var directory: String? {
        if case .fileEvents(let directory, _) = self { return directory }
        return nil
    }
}

struct HarnessError: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) {
        self.description = description
    }
}

/// inotify on a directory and on each directory created in it while watched.
private final class DirectoryWatcher {
    let descriptor: Int32
    private var directories: [Int32: String] = [:]
    private static let mask = UInt32(IN_CREATE | IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE)

    init(directory: String) throws {
        descriptor = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
        guard descriptor >= 0 else { throw HarnessError("inotify_init1 failed (errno \(errno))") }
        try watch(directory)
    }

    private func watch(_ directory: String) throws {
        let watch = inotify_add_watch(descriptor, directory, Self.mask)
        guard watch >= 0 else { throw HarnessError("inotify_add_watch failed (errno \(errno))") }
        directories[watch] = directory
    }

    /// Reads every pending event and returns how many there were.
    func drain() -> Int {
        var count = 0
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while true {
            let length = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            guard length > 0 else { return count }
            var offset = 0
            let header = MemoryLayout<inotify_event>.size
            while offset + header <= length {
                let (watch, mask, nameLength) = buffer.withUnsafeBytes { raw in
                    let event = raw.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
                    return (event.wd, event.mask, Int(event.len))
                }
                if mask & UInt32(IN_ISDIR) != 0, mask & UInt32(IN_CREATE) != 0, let parent = directories[watch] {
                    let nameBytes = buffer[(offset + header)..<min(length, offset + header + nameLength)]
                    let name = String(decoding: nameBytes.prefix { $0 != 0 }, as: UTF8.self)
                    try? self.watch(parent + "/" + name)
                }
                count += 1
                offset += header + nameLength
            }
        }
    }

    func close() {
        Glibc.close(descriptor)
    }
}

/// What `seedkit inspect --json` reports about a store's ledger, as the process-death tests check it.
struct StoreInspection {
    let clientID: String?
    /// -1 when the report has no pending count.
    let pending: Int64
    let accepted: Int64
    /// -1 when the report has no rejection list.
    let rejections: Int
    let blocked: Bool

    init(json line: String) throws {
        guard let object = try StrictJSONParser().parse(line).objectValue else {
            throw HarnessError("inspect --json printed no object")
        }
        let mutations = object["mutations"]?.objectValue
        clientID = object["client_id"]?.stringValue
        pending = mutations?["pending"]?.numberValue?.exactInt64 ?? -1
        accepted = mutations?["accepted"]?.numberValue?.exactInt64 ?? 0
        rejections = object["rejections"]?.arrayValue?.count ?? -1
        blocked = object["blocking_error"] != .null
    }
}
