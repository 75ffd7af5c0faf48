import Foundation
import SeedArtifacts
import SeedSources
import SynchroProtocol

/// `seedkit verify SEED.db|SEED.db.zst [--trusted-key PUB …] [--json]`: every publication check and every
/// device-installer check of a seed, offline, from ``SeedVerifier/verify(path:options:)``. Exit 0 when the seed
/// passes, 1 with findings, 2 when the input is not a usable seed file or the invocation is wrong, 6 when
/// `--trusted-key` is given and the publication's signature does not hold (checked first).
enum VerifyCommand {
    static let spec = CommandSpec(
        "verify", "every publication and device-installer check of a seed",
        positionals: [PositionalSpec(placeholder: "SEED.db[.zst]", help: "the seed, plain or packed")],
        options: [SignatureGate.optionSpec, .json("one JSON report instead of PASS and FAIL lines")])

    static func run(_ words: [String]) throws(Arguments.UsageError) -> ExitStatus {
        let arguments = try Arguments(words, spec: spec)
        try arguments.requirePositionals(atMost: 1, atLeast: 1)
        let path = arguments.positionals[0]
        let asJSON = arguments.flags.contains("json")
        if let status = FailureReport.missing(path, command: "verify", json: asJSON) { return status }
        let console = arguments.console("verify")
        let keys = try SignatureGate.trustedKeys(arguments)
        if let refused = SignatureGate.check(path, keys: keys, asJSON: asJSON, console: console) { return refused }
        SeedReportOutput.describeInput(path, console)
        if DeltaExporter.isDeltaSeed(path: path) { return verifyDeltaSeed(path, asJSON: asJSON, console: console) }
        let start = ContinuousClock.now
        let report: SeedVerificationReport
        do {
            report = try SeedVerifier.verify(path: path)
        } catch {
            return SeedReportOutput.unusable(rule: error.rule, message: error.description, asJSON: asJSON)
        }
        console.detail("\(report.checks) checks, \(report.rows) rows re-digested", since: start)
        if let status = SeedReportOutput.notASeed(report, path: path, command: "verify", asJSON: asJSON) {
            return status
        }
        SeedReportOutput.print(report, asJSON: asJSON, success: "seed verified", console: console)
        return report.ok ? .success : .checkFailed
    }

    /// A delta seed (docs/delta-sources.md, "Seed layout"): its layout, checkpoints, row counts and every digest
    /// recomputed. `{"findings": [{"check", "entity"}], "ok"}` under `--json`.
    private static func verifyDeltaSeed(_ path: String, asJSON: Bool, console: Console) -> ExitStatus {
        let failures = DeltaExporter.verify(path: path).map { failure in
            let parts = failure.split(separator: ":", maxSplits: 1).map(String.init)
            return (check: parts[0], entity: parts.count > 1 ? parts[1] : nil)
        }
        if asJSON {
            let findings = failures.map { failure in
                JSONValue.object(JSONObject([
                    JSONMember("check", .string(failure.check)),
                    JSONMember("entity", failure.entity.map { .string($0) } ?? .null),
                ]))
            }
            let object = JSONValue.object(JSONObject([
                JSONMember("findings", .array(findings)), JSONMember("kind", .string("delta")),
                JSONMember("ok", .bool(failures.isEmpty)),
            ]))
            Terminal.out(bytes: ((try? CanonicalJSON.encode(object)) ?? []) + [0x0A])
        } else {
            for failure in failures {
                console.result("FAIL \(failure.check)\(failure.entity.map { " (entity \($0))" } ?? "")\n")
            }
            console.info(failures.isEmpty ? "ok: delta seed verified\n" : "\(failures.count) findings (delta seed)\n")
        }
        return failures.isEmpty ? .success : .checkFailed
    }
}

/// How `verify` and `install` print a verification report.
enum SeedReportOutput {
    /// The report as one canonical JSON line, or one line per finding (the result) and a summary (dropped when
    /// quiet).
    static func print(_ report: SeedVerificationReport, asJSON: Bool, success: String, console: Console) {
        if asJSON {
            Terminal.out(bytes: (try? CanonicalJSON.encode(report.json)) ?? [])
            Terminal.out("\n")
            return
        }
        for finding in report.findings {
            console.result("FAIL \(finding)\n")
        }
        let summary = "\(report.checks) checks, \(report.rows) rows re-digested"
        if report.ok {
            console.info("ok: \(success) (\(summary))\n")
        } else {
            console.info("\(report.findings.count) findings (\(summary))\n")
        }
    }

    /// With `--verbose`: whether the seed is a zstd frame (unpacked to a temporary file first) or a database, and
    /// where temporary files go.
    static func describeInput(_ path: String, _ console: Console) {
        guard console.isVerbose else { return }
        let magic = FileHandle(forReadingAtPath: path).flatMap { handle in
            defer { try? handle.close() }
            return try? handle.read(upToCount: 4)
        }
        let kind = magic.map(Array.init) == [0x28, 0xB5, 0x2F, 0xFD] ? "a zstd frame, unpacked first" : "a database"
        console.detail("\(path): \(kind); temporary files in \(NSTemporaryDirectory())")
    }

    /// Input that is not a usable seed: exit status 2, with `{"error":…}` on standard output under `--json`.
    static func unusable(rule: String, message: String, asJSON: Bool, status: ExitStatus = .invalidInput)
        -> ExitStatus
    {
        FailureReport(rule: rule, message: message, status: status).print(command: "verify", json: asJSON)
    }

    /// A database without the seed layout at all (no `_synchro_meta`: a plain SQLite file) is one finding, "not a
    /// Synchro seed", exit status 2 — not one failure per missing table. Nil when `report` is about a seed.
    static func notASeed(_ report: SeedVerificationReport, path: String, command: String, asJSON: Bool)
        -> ExitStatus?
    {
        guard report.findings.contains(where: { $0.check.name == "internal_table_shape" && $0.table == "_synchro_meta" })
        else { return nil }
        return FailureReport(
            rule: "not_a_seed",
            message: "\(path) is not a Synchro seed: it has no _synchro_meta table (the seed layout of "
                + "spec/seed-format.md §2); nothing was checked further", status: .invalidInput
        ).print(command: command, json: asJSON)
    }
}
