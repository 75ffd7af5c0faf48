import Foundation
import Synchronization
import _SeedkitTestSupport

/// Runs the built `seedkit` with extra environment variables (credentials are passed the way users pass them),
/// for the `pipeline` and `rehearse` command tests. Standard output and error are pipes, never a terminal.
enum PipelineProcess {
    struct Outcome {
        let status: Int32
        let stdout: [UInt8]
        let stderr: [UInt8]

        var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
        var stderrText: String { String(decoding: stderr, as: UTF8.self) }
        var lines: [String] { stdoutText.split(separator: "\n").map(String.init) }
    }

    static func run(_ arguments: [String], environment: [String: String] = [:]) throws -> Outcome {
        let process = Process()
        process.executableURL = SeedkitProcess.executable
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        let output = Pipe(), errors = Pipe()
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let collected = Collected()
        let group = DispatchGroup()
        for (pipe, isStdout) in [(output, true), (errors, false)] {
            group.enter()
            let handle = pipe.fileHandleForReading
            DispatchQueue.global().async {
                collected.store(Array(handle.readDataToEndOfFile()), stdout: isStdout)
                group.leave()
            }
        }
        group.wait()
        process.waitUntilExit()
        let (out, err) = collected.values
        return Outcome(status: process.terminationStatus, stdout: out, stderr: err)
    }

    private final class Collected: Sendable {
        private let streams = Mutex<(out: [UInt8], err: [UInt8])>(([], []))

        func store(_ bytes: [UInt8], stdout: Bool) {
            streams.withLock { if stdout { $0.out = bytes } else { $0.err = bytes } }
        }

        var values: ([UInt8], [UInt8]) {
            streams.withLock { ($0.out, $0.err) }
        }
    }
}
