import Foundation
import SeedArtifacts
import SystemKit

/// Rehearses a seed file (`seedkit rehearse`): installs a copy into a temporary directory exactly as a device
/// would (``SeedInstaller``, `.db` or `.db.zst`), runs its first authenticated sync (``SeedRehearsal``) and
/// removes the directory. The seed file itself is only read.
public enum SeedFileRehearsal {
    /// The install and the rehearsal.
    public struct Outcome: Sendable {
        public let install: SeedInstallReport
        public let rehearsal: RehearsalReport
    }

    /// Installs `seed` in a fresh directory under `temporaryDirectory` (nil: the system's) and rehearses it.
    public static func run(
        seed: String, options: RehearsalOptions, temporaryDirectory: String? = nil
    ) throws(SeedFileRehearsalError) -> Outcome {
        let directory = URL(fileURLWithPath: temporaryDirectory ?? NSTemporaryDirectory())
            .appendingPathComponent("seedkit-rehearse-\(UUID().uuidString.lowercased())").path
        do {
            try FileSystem.makeDirectory(directory)
        } catch {
            throw .workDirectory(path: directory)
        }
        defer { FileSystem.removeTree(directory) }
        let database = URL(fileURLWithPath: directory).appendingPathComponent("app.db").path
        let install: SeedInstallReport
        do {
            install = try SeedInstaller.install(
                seed: seed, to: database, options: SeedInstallOptions(temporaryDirectory: directory))
        } catch {
            throw .install(error)
        }
        do {
            let rehearsal = try SeedRehearsal.run(installed: database, workDirectory: directory, options: options)
            return Outcome(install: install, rehearsal: rehearsal)
        } catch {
            throw .rehearsal(error)
        }
    }
}

/// Why a seed file could not be rehearsed (a rehearsal that ran and failed is a report, not an error).
public enum SeedFileRehearsalError: Error, Sendable, CustomStringConvertible {
    /// The seed did not install: unusable input, failed checks, or a file operation.
    case install(SeedInstallError)
    /// The first sync could not run (store, transport, a sync error such as a refused credential).
    case rehearsal(RehearsalError)
    /// The temporary directory could not be created.
    case workDirectory(path: String)

    public var rule: String {
        switch self {
        case .install(let error): "install.\(error.rule)"
        // A network failure keeps its kind as the rule (`connection_refused`), the same for every command.
        case .rehearsal(.sync(let error)) where error.networkRule != nil: error.networkRule ?? ""
        case .rehearsal(let error): "rehearsal.\(error.rule)"
        case .workDirectory: "work_directory"
        }
    }

    /// The seed file cannot be used at all (missing, not a seed): the invocation is at fault.
    public var isInvalidInput: Bool {
        if case .install(.unusableSeed) = self { return true }
        return false
    }

    public var description: String {
        switch self {
        case .install(let error): "the seed did not install: \(error)"
        case .rehearsal(let error): "\(error)"
        case .workDirectory(let path): "cannot create the temporary directory \(path)"
        }
    }
}
