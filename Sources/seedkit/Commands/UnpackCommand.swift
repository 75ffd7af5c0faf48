import Foundation
import SeedArtifacts

/// `seedkit unpack FILE.zst [--patch-from PREVIOUS.db] [--trusted-key PUB …]`: exactly one checksummed zstd frame
/// back into a file, within a size limit, published atomically; with `--patch-from`, a patch applied to the previous
/// seed. With `--trusted-key`, the frame's publication signature is checked first (exit 6) and the output must have
/// the signed digest of the seed before it is published (see docs/cli.md).
enum UnpackCommand {
    static let spec = CommandSpec(
        "unpack", "decompress a packed seed, refusing damage and oversize",
        positionals: [PositionalSpec(placeholder: "FILE.zst", help: "the frame (or patch) to unpack")],
        options: [
            .value("out", "FILE", .path, "the database to write", default: "FILE.zst without .zst (or .patch.zst)"),
            PackCommand.maximumOutputBytes("refuse output larger than this, before anything is written"),
            .value("patch-from", "PREVIOUS.db", .path, "the previous seed a patch was made against"),
            SignatureGate.optionSpec,
            .force(),
            .json(),
        ])

    static func run(_ words: [String]) throws(Arguments.UsageError) -> ExitStatus {
        let arguments = try Arguments(words, spec: spec)
        try arguments.requirePositionals(atMost: 1, atLeast: 1)
        let input = arguments.positionals[0]
        guard let output = arguments.values["out"] ?? defaultOutput(input) else {
            throw Arguments.UsageError(message: "\(input) does not end in .zst; name the output with --out FILE")
        }
        var options = UnpackOptions(overwrite: arguments.flags.contains("force"))
        options.patchFrom = arguments.values["patch-from"]
        let keys = try SignatureGate.trustedKeys(arguments)
        let console = arguments.console("unpack")
        if let refused = SignatureGate.check(
            input, keys: keys, asJSON: arguments.flags.contains("json"), console: console) { return refused }
        if !keys.isEmpty {
            // The seed's subject: `seed.db` for `seed.db.zst` and `seed.db.patch.zst`.
            let name = URL(fileURLWithPath: String(input.dropLast(4))).lastPathComponent
            let seedName = name.hasSuffix(".patch") ? String(name.dropLast(6)) : name
            guard let digest = PublicationSignature.signedDigest(of: seedName, beside: input, trustedKeys: keys) else {
                Terminal.err("seedkit: the signed statement names no \(seedName) to check the output against\n")
                return .signatureRefused
            }
            options.expectedSHA256 = digest
        }
        if let limit = arguments.byteCount("max-output-bytes") { options.maximumOutputBytes = limit }
        if let status = FailureReport.missing(input, command: "unpack", json: arguments.flags.contains("json")) {
            return status
        }
        let display = PackOutput(
            command: "unpack", input: input, json: arguments.flags.contains("json"), console: console)
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
            let status = display.failure(error)
            // The content is not the seed that was signed: a signature refusal, like the checks before it.
            if case .digestMismatch = error { return .signatureRefused }
            return status
        }
    }

    /// `seed.db.zst` and `seed.db.patch.zst` unpack to `seed.db`.
    private static func defaultOutput(_ input: String) -> String? {
        let stem = input.hasSuffix(".patch.zst") ? input.dropLast(10) : input.dropLast(4)
        guard input.hasSuffix(".zst"), !stem.isEmpty, !stem.hasSuffix("/") else { return nil }
        return String(stem)
    }
}
