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

    /// Runs `seedkit arguments…` and reads its own peak resident memory (`VmHWM`, KiB), which `seedkit` writes at
    /// exit to the file `SEEDKIT_PEAK_MEMORY_FILE` names (`PeakMemoryReport`); `peakKiB` is 0 when it wrote none.
    /// (`wait4`'s maximum RSS of a spawned child would include this test process's own high-water mark.)
    public static func runMeasured(
        _ arguments: [String], environment: [String: String] = [:]
    ) throws -> (outcome: Outcome, peakKiB: Int) {
        let directory = try TemporaryDirectory(prefix: "seedkit-peak")
        let report = directory.path("peak")
        let outcome = try run(arguments, environment: environment.merging(["SEEDKIT_PEAK_MEMORY_FILE": report]) {
            _, new in new
        })
        let text = (try? String(contentsOfFile: report, encoding: .utf8)) ?? ""
        let octets = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        return (outcome, octets / 1024)
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
