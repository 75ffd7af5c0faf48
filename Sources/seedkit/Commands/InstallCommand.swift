import SeedArtifacts
import SynchroProtocol

/// `seedkit install SEED.db[.zst] --to APP.db [--json]`: installs a seed as a device's first database, exactly as
/// the upstream Swift SDK's installer does, from ``SeedInstaller/install(seed:to:options:)``. Exit 0 when
/// installed, 1 when the seed was rejected (findings printed), 2 for a wrong invocation, an unusable seed file, an
/// existing destination (never overwritten) or a file operation that failed.
enum InstallCommand {
    static func run(_ words: [String]) throws(Arguments.UsageError) -> ExitStatus {
        let arguments = try Arguments(words, flags: ["json"], valued: ["to"])
        try arguments.requirePositionals(atMost: 1, atLeast: 1)
        guard let destination = arguments.values["to"], !destination.isEmpty else {
            throw Arguments.UsageError(message: "install needs --to APP.db")
        }
        let seed = arguments.positionals[0]
        let asJSON = arguments.flags.contains("json")
        if let status = FailureReport.missing(seed, command: "install", json: asJSON) { return status }
        let console = arguments.console("install")
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
            return failed(error, asJSON: asJSON, console: console)
        }
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
