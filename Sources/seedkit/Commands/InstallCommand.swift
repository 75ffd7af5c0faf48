import SeedArtifacts
import SynchroProtocol
import SystemKit
import Glibc

/// `seedkit install SEED.db[.zst] --to APP.db [--json]`: installs a seed as a device's first database, exactly as
/// the upstream Swift SDK's installer does, from ``SeedInstaller/install(seed:to:options:)``. Exit 0 when
/// installed, 1 when the seed was rejected (findings printed), 2 for a wrong invocation, an unusable seed file, an
/// existing destination (never overwritten) or a file operation that failed, 6 when `--trusted-key` is given and
/// the signature does not hold (checked first).
enum InstallCommand {
    static let spec = CommandSpec(
        "install", "install a seed as a device's first database, never overwriting",
        positionals: [PositionalSpec(placeholder: "SEED.db[.zst]", help: "the seed, plain or packed")],
        options: [
            .value("to", "APP.db", .path, "the device database to create; an existing file is refused", required: true),
            SignatureGate.optionSpec,
            .json(),
        ])

    static func run(_ words: [String]) throws(Arguments.UsageError) -> ExitStatus {
        let arguments = try Arguments(words, spec: spec)
        try arguments.requirePositionals(atMost: 1, atLeast: 1)
        guard let destination = arguments.values["to"], !destination.isEmpty else {
            throw Arguments.UsageError(message: "install needs --to APP.db")
        }
        let seed = arguments.positionals[0]
        let asJSON = arguments.flags.contains("json")
        if let status = FailureReport.missing(seed, command: "install", json: asJSON) { return status }
        if let failure = destinationDirectoryProblem(destination) {
            return FailureReport(rule: "io", message: failure.description, status: .checkFailed)
                .print(command: "install", json: asJSON)
        }
        let console = arguments.console("install")
        let keys = try SignatureGate.trustedKeys(arguments)
        if let refused = SignatureGate.check(seed, keys: keys, asJSON: asJSON, console: console) { return refused }
        SeedReportOutput.describeInput(seed, console)
        console.detail("destination \(destination), published by link() only if nothing exists there")
        let start = ContinuousClock.now
        do {
            let report = try SeedInstaller.install(seed: seed, to: destination)
            console.detail("installed", since: start)
            SeedReportOutput.print(
                report.verification, asJSON: asJSON, success: "installed \(destination)", console: console)
            return .success
        } catch {
            console.detail("refused", since: start)
            if case .invalidSeed(let report) = error,
               let status = SeedReportOutput.notASeed(report, path: seed, command: "install", asJSON: asJSON)
            {
                return status
            }
            return failed(error, asJSON: asJSON, console: console)
        }
    }

    /// Why nothing can be written beside `destination` (its directory missing, not a directory, or not writable),
    /// as the system call that fails with its reason; checked first so the message names the directory and the OS
    /// reason instead of an unpack failure of the seed.
    static func destinationDirectoryProblem(_ destination: String) -> SystemError? {
        let directory = FileSystem.split(destination).directory
        var info = stat()
        guard stat(directory, &info) == 0 else { return .last("use the directory", path: directory) }
        guard info.st_mode & S_IFMT == S_IFDIR else {
            return SystemError(operation: "use the directory", path: directory, code: ENOTDIR)
        }
        guard access(directory, W_OK) == 0 else { return .last("write into", path: directory) }
        return nil
    }

    private static func failed(_ error: SeedInstallError, asJSON: Bool, console: Console) -> ExitStatus {
        switch error {
        case .invalidSeed(let report):
            SeedReportOutput.print(report, asJSON: asJSON, success: "", console: console)
            Terminal.err("seedkit: the seed was rejected; nothing was installed\n")
            return .checkFailed
        case .cleanupFailed(_, _, .invalidSeed(let report)):
            SeedReportOutput.print(report, asJSON: asJSON, success: "", console: console)
            Terminal.err("seedkit: \(error)\n")
            return .checkFailed
        case .destinationExists, .unusableSeed, .io, .cleanupFailed:
            return SeedReportOutput.unusable(rule: error.rule, message: error.description, asJSON: asJSON)
        }
    }
}
