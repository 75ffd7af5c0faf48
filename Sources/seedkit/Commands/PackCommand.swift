import Foundation
import SeedArtifacts
import Synchronization
import SynchroProtocol

/// `seedkit pack FILE [--patch-from PREVIOUS.db]`: one zstd frame with content size and checksum, published
/// atomically; with `--patch-from`, a patch against the previous seed, `FILE.patch.zst` (see docs/cli.md).
enum PackCommand {
    static let spec = CommandSpec(
        "pack", "compress a seed into one checksummed zstd frame (or a patch)",
        positionals: [PositionalSpec(placeholder: "FILE", help: "the seed database")],
        options: [
            .value(
                "out", "FILE.zst", .path, "the frame to write", default: "FILE.zst, or FILE.patch.zst with --patch-from"),
            .value("level", "N", .integer(Int64(PackOptions.levels.lowerBound)...Int64(PackOptions.levels.upperBound)),
                   "zstd compression level", default: "\(PackOptions.defaultLevel)")
                .invalidValues(rule: "invalid_level"),
            .value("workers", "N", .integer(1...256), "compression threads; the frame is the same for any count",
                   default: "one per processor, at most 4").invalidValues(rule: "invalid_worker_count"),
            maximumOutputBytes("refuse to write a frame larger than this"),
            .value("patch-from", "PREVIOUS.db", .path, "write a patch that only unpacks against this previous seed"),
            .force(),
            .json(),
        ])

    /// `--max-output-bytes N` of `pack` and `unpack`, with the library's default limit.
    static func maximumOutputBytes(_ help: String) -> OptionSpec {
        .value("max-output-bytes", "N", .byteCount, help, default: "\(PackOptions.defaultMaximumOutputBytes >> 30)G")
    }

    static func run(_ words: [String]) throws(Arguments.UsageError) -> ExitStatus {
        let arguments = try Arguments(words, spec: spec)
        try arguments.requirePositionals(atMost: 1, atLeast: 1)
        let input = arguments.positionals[0]
        var options = PackOptions(overwrite: arguments.flags.contains("force"))
        if let level = arguments.integer("level") { options.level = Int32(level) }
        if let workers = arguments.values["workers"].flatMap({ Int($0) }) { options.workers = workers }
        if let limit = arguments.byteCount("max-output-bytes") { options.maximumOutputBytes = limit }
        if let status = FailureReport.missing(input, command: "pack", json: arguments.flags.contains("json")) {
            return status
        }
        options.patchFrom = arguments.values["patch-from"]
        let output = arguments.values["out"] ?? input + (options.patchFrom == nil ? ".zst" : ".patch.zst")
        let display = PackOutput(
            command: "pack", input: input, json: arguments.flags.contains("json"), console: arguments.console("pack"))
        options.progress = display.progress
        if let previous = options.patchFrom { display.console.detail("a patch against \(previous)") }
        display.console.detail("\(input) → \(output): level \(options.level), \(options.workers) worker(s), output "
            + "limit \(options.maximumOutputBytes) bytes, " + (options.overwrite ? "replacing" : "never replacing")
            + " an existing output")

        let clock = ContinuousClock()
        let start = clock.now
        do throws(PackError) {
            let report = try SeedPacker.pack(input, to: output, options: options)
            return display.success(
                report, database: input, frame: output, written: output, elapsed: start.duration(to: clock.now))
        } catch {
            return display.failure(error)
        }
    }
}

/// What `pack` and `unpack` print: a summary with `sha256sum`-style digest lines (nothing when quiet), or one
/// canonical JSON object with `--json`; progress on standard error when it is a terminal. Never file contents.
struct PackOutput: Sendable {
    /// `pack` or `unpack`.
    let command: String
    let input: String
    let json: Bool
    let console: Console

    /// Whether a progress line is on the terminal without its newline yet.
    private let progressLineOpen = ProgressLineState()

    init(command: String, input: String, json: Bool, console: Console) {
        self.command = command
        self.input = input
        self.json = json
        self.console = console
    }

    /// Percent lines on a terminal; nil otherwise (or when quiet), so nothing is computed for a pipe.
    var progress: (@Sendable (PackProgress) -> Void)? {
        guard !json, console.drawsProgress else { return nil }
        let (verb, input, lineOpen) = (command + "ing", input, progressLineOpen)
        return { progress in
            let total = progress.totalBytes
            guard total > 0 else { return }
            let done = progress.processedBytes >= total
            Terminal.progress("\r\(verb) \(input): \(progress.processedBytes * 100 / total)%" + (done ? "\n" : ""))
            lineOpen.flag.store(!done, ordering: .relaxed)
        }
    }

    func success(
        _ report: PackReport, database: String, frame: String, written: String, elapsed: Duration
    ) -> ExitStatus {
        let ratio = (report.ratio * 1000).rounded() / 1000
        console.detail("published \(written)", took: elapsed)
        if json {
            let members: [(String, JSONValue)] = [
                ("command", .string(command)),
                ("output", .string(written)),
                ("uncompressed", Self.side(database, report.uncompressedBytes, report.uncompressedSHA256)),
                ("compressed", Self.side(frame, report.compressedBytes, report.compressedSHA256)),
                ("ratio", JSONNumber(ratio).map(JSONValue.number) ?? .null),
                ("level", report.level.map { .number(JSONNumber(Int64($0))) } ?? .null),
            ]
            return JSONLines.write(members) ? .success : .checkFailed
        }
        let level = report.level.map { ", level \($0)" } ?? ""
        let parts = elapsed.components
        let seconds = ((Double(parts.seconds) + Double(parts.attoseconds) / 1e18) * 100).rounded() / 100
        console.info("""
            \(command)ed \(input) into \(written): \(report.uncompressedBytes) bytes \
            uncompressed, \(report.compressedBytes) compressed (ratio \(ratio)\(level)) in \(seconds) s
            \(report.uncompressedSHA256)  \(database)
            \(report.compressedSHA256)  \(frame)

            """)
        return .success
    }

    /// Input problems and refusals exit 2; a failing system call (disk full, permission) exits 1.
    func failure(_ error: PackError) -> ExitStatus {
        if json {
            _ = JSONLines.write([
                ("error", .object(JSONObject(["rule": .string(error.rule), "message": .string(error.message)]))),
            ])
        }
        let newline = progressLineOpen.flag.exchange(false, ordering: .relaxed) ? "\n" : ""
        Terminal.err(newline + "seedkit: cannot \(command) \(input) (\(error.rule)): \(error.message)\n")
        return error.rule == "io" ? .checkFailed : .invalidInput
    }

    private static func side(_ path: String, _ bytes: Int64, _ sha256: String) -> JSONValue {
        .object(JSONObject([
            "path": .string(path), "bytes": .number(JSONNumber(bytes)), "sha256": .string(sha256),
        ]))
    }
}

/// Shared between the progress handler and the failure report.
final class ProgressLineState: Sendable {
    let flag = Atomic<Bool>(false)
}
