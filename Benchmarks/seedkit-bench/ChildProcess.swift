import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// CPU time consumed so far, for figures that must hold on a loaded machine where wall time follows the load.
enum CPUClock {
    /// User + system time of the calling thread (`CLOCK_THREAD_CPUTIME_ID`).
    static func thread() -> Duration {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return .seconds(Int64(time.tv_sec)) + .nanoseconds(Int64(time.tv_nsec))
    }

    /// User + system time of every thread of this process.
    static func process() -> Duration {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return usage.cpuTime
    }
}

extension rusage {
    /// User + system time.
    var cpuTime: Duration {
        func duration(_ time: timeval) -> Duration {
            .seconds(Int64(time.tv_sec)) + .microseconds(Int64(time.tv_usec))
        }
        return duration(ru_utime) + duration(ru_stime)
    }
}

/// A child process of the benchmark, started with `posix_spawn`, whose resource usage is that of the child
/// alone (`wait4`), so that a peak-memory figure never includes the benchmark or another process.
final class ChildProcess {
    /// How a finished child ended and what it used.
    struct Outcome {
        /// The exit status, or nil when a signal ended it.
        let exitStatus: Int32?
        /// `ru_maxrss` in octets. Misleading for a spawned child: at `exec` it takes the high-water mark of the
        /// parent's address space the child shared until then (see ``ownPeakBytes``).
        let maxResidentBytes: Int
        /// The child's own peak resident set (`VmHWM`, anonymous memory and mapped file pages alike), as a
        /// `seedkit` child reports it at exit (`SEEDKIT_PEAK_MEMORY_FILE`); nil for a child that did not report.
        let ownPeakBytes: Int?
        /// The largest anonymous resident memory seen (`RssAnon` of /proc/PID/status, sampled while waiting).
        let sampledAnonymousBytes: Int
        /// The largest resident file-backed memory seen (`RssFile`: the binary, libraries and mapped files).
        let sampledFileBytes: Int
        /// User + system time of the child.
        let cpu: Duration
        /// Where the wall time went besides CPU: time runnable but waiting for a core (the sum over the child's
        /// threads of `/proc/PID/task/TID/schedstat`'s run-queue delay, sampled while waiting, so a thread's last
        /// interval before it ended is missed), and the child's I/O as `wait4` counts it.
        var waits = Waits()
    }

    /// A finished child's waiting and I/O (``Outcome/waits``).
    struct Waits {
        /// Time runnable but not running (other processes held the cores), over the child's threads as sampled.
        var runQueue: Duration = .zero
        /// Page faults that read from the disk (`ru_majflt`).
        var majorFaults = 0
        /// File-system input and output in octets (`ru_inblock`, `ru_oublock`: 512-octet blocks that reached or
        /// left the block layer, not reads served by the page cache).
        var readBytes = 0
        var writtenBytes = 0
        /// Context switches: voluntary (waiting for I/O, a lock, a sleep) and involuntary (preempted).
        var voluntarySwitches = 0
        var involuntarySwitches = 0
    }

    /// `seedkit` beside this benchmark's executable (both are products of the same build).
    static func seedkitExecutable() throws -> String {
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        let candidate = executable.deletingLastPathComponent().appendingPathComponent("seedkit").path
        guard FileManager.default.isExecutableFile(atPath: candidate) else {
            throw BenchmarkFailure("\(candidate) not found: build the seedkit product too (make release)")
        }
        return candidate
    }

    let pid: pid_t
    /// Where the child writes its own peak memory at exit.
    private let peakReport: String
    /// The read end of the child's standard output when it was captured.
    private var output: Int32
    private var finished = false

    /// Starts `executable` with `arguments`, the current environment plus `environment`, standard input from
    /// /dev/null, standard error inherited and standard output captured (`captureOutput`) or sent to /dev/null.
    init(executable: String, arguments: [String], environment: [String: String], captureOutput: Bool) throws {
        var pipeEnds: [Int32] = [-1, -1]
        if captureOutput {
            guard pipe(&pipeEnds) == 0 else { throw BenchmarkFailure("pipe failed") }
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        if captureOutput {
            posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], 1)
            posix_spawn_file_actions_addclose(&actions, pipeEnds[0])
            posix_spawn_file_actions_addclose(&actions, pipeEnds[1])
        } else {
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        }
        var variables: [String: String] = [:]
        var cursor = environ
        while let entry = cursor.pointee {
            let text = String(cString: entry)
            if let equals = text.firstIndex(of: "=") {
                variables[String(text[..<equals])] = String(text[text.index(after: equals)...])
            }
            cursor += 1
        }
        variables.merge(environment) { _, new in new }
        let report = "/tmp/seedkit-bench-peak-\(getpid())-\(ChildProcess.nextReport())"
        unlink(report)
        variables["SEEDKIT_PEAK_MEMORY_FILE"] = report
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = variables.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var child: pid_t = 0
        let spawned = posix_spawn(&child, executable, &actions, nil, argv, envp)
        if captureOutput { close(pipeEnds[1]) }
        guard spawned == 0 else {
            if captureOutput { close(pipeEnds[0]) }
            throw BenchmarkFailure("cannot start \(executable): error \(spawned)")
        }
        pid = child
        peakReport = report
        output = captureOutput ? pipeEnds[0] : -1
    }

    private static let reports = Mutex(0)

    private static func nextReport() -> Int {
        reports.withLock { count in
            count += 1
            return count
        }
    }

    deinit {
        if !finished {
            kill(pid, SIGKILL)
            _ = try? wait()
        }
        if output >= 0 { close(output) }
        unlink(peakReport)
    }

    /// The next line of the captured standard output, without its newline; nil at end of file.
    func readLine() -> String? {
        var line: [UInt8] = []
        var octet: UInt8 = 0
        while read(output, &octet, 1) == 1 {
            if octet == UInt8(ascii: "\n") { return String(decoding: line, as: UTF8.self) }
            line.append(octet)
        }
        return line.isEmpty ? nil : String(decoding: line, as: UTF8.self)
    }

    /// Sends `signal` to the child.
    func signal(_ number: Int32) {
        kill(pid, number)
    }

    /// Waits for the child to end and returns its exit status and its own resource usage; with `sampling`, reads
    /// the child's resident memory split (anonymous, file-backed) at that interval until it ends.
    @discardableResult
    func wait(sampling interval: Duration? = nil) throws -> Outcome {
        var status: Int32 = 0
        var usage = rusage()
        var (anonymous, file) = (0, 0)
        var runQueue: [Int: Int] = [:]
        while true {
            let reaped = wait4(pid, &status, interval == nil ? 0 : WNOHANG, &usage)
            if reaped == pid { break }
            guard reaped == 0 || errno == EINTR else { throw BenchmarkFailure("wait4 failed: errno \(errno)") }
            guard let interval, reaped == 0 else { continue }
            let sample = residentMemory()
            anonymous = max(anonymous, sample.anonymous)
            file = max(file, sample.file)
            for (thread, delay) in runQueueDelays() { runQueue[thread] = max(runQueue[thread] ?? 0, delay) }
            let (seconds, attoseconds) = interval.components
            var pause = timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
            nanosleep(&pause, nil)
        }
        finished = true
        // WIFEXITED / WEXITSTATUS, which Swift does not import as macros.
        let exited = status & 0x7F == 0
        var outcome = Outcome(
            exitStatus: exited ? (status >> 8) & 0xFF : nil, maxResidentBytes: Int(usage.ru_maxrss) * 1024,
            ownPeakBytes: reportedPeak(), sampledAnonymousBytes: anonymous, sampledFileBytes: file,
            cpu: usage.cpuTime)
        outcome.waits = Waits(
            runQueue: .nanoseconds(runQueue.values.reduce(0, +)), majorFaults: Int(usage.ru_majflt),
            readBytes: Int(usage.ru_inblock) * 512, writtenBytes: Int(usage.ru_oublock) * 512,
            voluntarySwitches: Int(usage.ru_nvcsw), involuntarySwitches: Int(usage.ru_nivcsw))
        return outcome
    }

    /// Each live thread's run-queue delay so far in nanoseconds (`schedstat`'s second field), by thread ID.
    private func runQueueDelays() -> [Int: Int] {
        guard let threads = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task") else { return [:] }
        var delays: [Int: Int] = [:]
        for thread in threads {
            guard let id = Int(thread),
                  let text = try? String(contentsOfFile: "/proc/\(pid)/task/\(thread)/schedstat", encoding: .utf8)
            else { continue }
            let fields = text.split(separator: " ")
            if fields.count >= 2, let delay = Int(fields[1]) { delays[id] = delay }
        }
        return delays
    }

    /// The peak the child wrote at exit, in octets.
    private func reportedPeak() -> Int? {
        let descriptor = open(peakReport, O_RDONLY)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        guard count > 0 else { return nil }
        return Int(String(decoding: buffer[..<count], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// `RssAnon` and `RssFile` of /proc/PID/status in octets; zeros when the file cannot be read.
    private func residentMemory() -> (anonymous: Int, file: Int) {
        let descriptor = open("/proc/\(pid)/status", O_RDONLY)
        guard descriptor >= 0 else { return (0, 0) }
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        guard count > 0 else { return (0, 0) }
        var result = (anonymous: 0, file: 0)
        for line in String(decoding: buffer[..<count], as: UTF8.self).split(separator: "\n") {
            let fields = line.split { $0 == " " || $0 == "\t" }
            guard fields.count >= 2, let kilobytes = Int(fields[1]) else { continue }
            if fields[0] == "RssAnon:" { result.anonymous = kilobytes * 1024 }
            if fields[0] == "RssFile:" { result.file = kilobytes * 1024 }
        }
        return result
    }
}
