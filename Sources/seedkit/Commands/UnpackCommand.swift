import SeedArtifacts

/// `seedkit unpack FILE.zst`: exactly one checksummed zstd frame back into a file, within a size limit,
/// published atomically (see docs/cli.md).
enum UnpackCommand {
    static func run(_ words: [String]) throws(Arguments.UsageError) -> ExitStatus {
        let arguments = try Arguments(words, flags: ["force", "json"], valued: ["out", "max-output-bytes"])
        try arguments.requirePositionals(atMost: 1, atLeast: 1)
        let input = arguments.positionals[0]
        guard let output = arguments.values["out"] ?? defaultOutput(input) else {
            throw Arguments.UsageError(message: "\(input) does not end in .zst; name the output with --out FILE")
        }
        var options = UnpackOptions(overwrite: arguments.flags.contains("force"))
        if let limit = try PackOutput.byteCount(arguments, "max-output-bytes") { options.maximumOutputBytes = limit }
        if let status = FailureReport.missing(input, command: "unpack", json: arguments.flags.contains("json")) {
            return status
        }
        let display = PackOutput(
            command: "unpack", input: input, json: arguments.flags.contains("json"), console: arguments.console("unpack"))
        options.progress = display.progress
        display.console.detail("\(input) → \(output): output limit \(options.maximumOutputBytes) bytes, "
            + (options.overwrite ? "replacing" : "never replacing") + " an existing output")

        let clock = ContinuousClock()
        let start = clock.now
        do throws(PackError) {
            let report = try SeedPacker.unpack(input, to: output, options: options)
            return display.success(
                report, database: output, frame: input, written: output, elapsed: start.duration(to: clock.now))
        } catch {
            return display.failure(error)
        }
    }

    /// `seed.db.zst` unpacks to `seed.db`.
    private static func defaultOutput(_ input: String) -> String? {
        let stem = input.dropLast(4)
        guard input.hasSuffix(".zst"), !stem.isEmpty, !stem.hasSuffix("/") else { return nil }
        return String(stem)
    }
}
