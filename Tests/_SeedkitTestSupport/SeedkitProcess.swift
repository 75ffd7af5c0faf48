import Foundation
import Synchronization

/// Runs the built `seedkit` binary the way a user does and captures what it prints.
public struct SeedkitProcess {
    /// What one run printed and how it ended.
    public struct Outcome: Sendable {
        public let status: Int32
        public let stdout: [UInt8]
        public let stderr: [UInt8]

        public var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
        public var stderrText: String { String(decoding: stderr, as: UTF8.self) }
        /// Standard output split into lines (JSON Lines output).
        public var lines: [String] { stdoutText.split(separator: "\n").map(String.init) }
    }

    /// The binary built beside the test bundle (`swift test` builds every product of the package).
    public static var executable: URL {
        let bundleDirectory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        let candidates = [
            bundleDirectory.appendingPathComponent("seedkit"),
            bundleDirectory.deletingLastPathComponent().appendingPathComponent("seedkit"),
            RepositoryLayout.root.appendingPathComponent(".build/debug/seedkit"),
        ]
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) } ?? candidates[0]
    }

    /// Runs `seedkit arguments…` under GNU time (`/usr/bin/time -f %M`), which waits for it with `wait4` and
    /// prints its peak resident memory in KiB as the last line of standard error; that line is removed from the
    /// outcome. `peakKiB` is 0 when the line is missing.
    public static func runMeasured(_ arguments: [String]) throws -> (outcome: Outcome, peakKiB: Int) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/time")
        process.arguments = ["-f", "%M", executable.path] + arguments
        let output = Pipe(), errors = Pipe()
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let collected = CollectedOutput()
        let group = DispatchGroup()
        for (pipe, isStdout) in [(output, true), (errors, false)] {
            group.enter()
            DispatchQueue.global().async {
                let data = pipe.fileHandleForReading.readDataToEndOfFile()
                collected.store(Array(data), stdout: isStdout)
                group.leave()
            }
        }
        group.wait()
        process.waitUntilExit()
        let (out, err) = collected.values
        var lines = String(decoding: err, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
        while lines.last == "" { lines.removeLast() }
        let peak = lines.last.flatMap { Int($0) } ?? 0
        if peak > 0 { lines.removeLast() }
        let stderr = Array(lines.joined(separator: "\n").utf8)
        return (Outcome(status: process.terminationStatus, stdout: out, stderr: stderr), peak)
    }

    /// Runs `seedkit arguments…` with `stdin` as standard input and `environment` added to this process's.
    public static func run(
        _ arguments: [String], stdin: [UInt8] = [], environment: [String: String] = [:]
    ) throws -> Outcome {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        }
        let input = Pipe(), output = Pipe(), errors = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        // Drain both pipes concurrently so a large output cannot block the child.
        let collected = CollectedOutput()
        let group = DispatchGroup()
        for (pipe, isStdout) in [(output, true), (errors, false)] {
            group.enter()
            DispatchQueue.global().async {
                let data = pipe.fileHandleForReading.readDataToEndOfFile()
                collected.store(Array(data), stdout: isStdout)
                group.leave()
            }
        }
        input.fileHandleForWriting.write(Data(stdin))
        try input.fileHandleForWriting.close()
        group.wait()
        process.waitUntilExit()
        let (out, err) = collected.values
        return Outcome(status: process.terminationStatus, stdout: out, stderr: err)
    }
}

private final class CollectedOutput: Sendable {
    private let streams = Mutex<(out: [UInt8], err: [UInt8])>(([], []))

    func store(_ bytes: [UInt8], stdout: Bool) {
        streams.withLock { if stdout { $0.out = bytes } else { $0.err = bytes } }
    }

    var values: ([UInt8], [UInt8]) {
        streams.withLock { ($0.out, $0.err) }
    }
}
