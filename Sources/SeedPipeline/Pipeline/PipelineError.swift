import SeedArtifacts
import SynchroServer
import SystemKit

/// Why a pipeline run stopped before its first step (a failing step is a ``PipelineReport``, not an error).
/// Descriptions name paths, scopes and rules, never a credential.
public enum PipelineError: Error, Sendable, CustomStringConvertible {
    /// The embedded source's dataset does not load.
    case invalidDataset(path: String, DatasetError)
    /// `scopes` names a scope the source does not declare portable.
    case scopeNotPortable(String)
    /// The publish directory holds something other than a publication (or is not a directory): a run replaces
    /// the whole directory, so it refuses to touch foreign files.
    case publishDirectoryNotPublication(path: String, entry: String)
    /// The server source cannot be reached, refused the operator credential or answered outside the protocol.
    case source(SeedExportError)
    /// The embedded reference server could not start.
    case embeddedServer(String)
    /// The publication could not be signed (the key failed, or the statement could not be encoded).
    case signing(SigningError)
    /// Another run holds the publish directory's lock (`<parent>/.<name>.lock`); `holderPID` is the PID it
    /// recorded. Nothing was read or written.
    case locked(directory: String, holderPID: Int32?)
    /// SIGINT or SIGTERM arrived before the first step (while waiting for the lock or preparing the source).
    case interrupted
    /// A file operation on the scratch or publish directory failed.
    case io(operation: String, path: String, errno: Int32)

    /// The stable snake_case rule name.
    public var rule: String {
        switch self {
        case .invalidDataset(_, let error): "invalid_dataset.\(error.rule.rawValue)"
        case .scopeNotPortable: "scope_not_portable"
        case .publishDirectoryNotPublication: "publish_directory_not_publication"
        // A network failure keeps its kind as the rule (`connection_refused`), the same for every command.
        case .source(.transport(_, _, let rule, _)): rule
        case .source(let error): "source.\(error.rule)"
        case .embeddedServer: "embedded_server_failed"
        case .signing(let error): "signing.\(error.rule)"
        case .locked: "locked"
        case .interrupted: "interrupted"
        case .io: "io_failed"
        }
    }

    /// Whether the pipeline file (or what it points at) is at fault rather than the environment: exit status 2.
    public var isInvalidInput: Bool {
        switch self {
        case .invalidDataset, .scopeNotPortable, .publishDirectoryNotPublication: true
        case .source, .embeddedServer, .signing, .io, .locked, .interrupted: false
        }
    }

    public var description: String {
        switch self {
        case .invalidDataset(let path, let error): "the dataset \(path) is invalid: \(error)"
        case .scopeNotPortable(let scope): "scopes: \(scope) is not a portable scope of the source"
        case .publishDirectoryNotPublication(let path, let entry):
            "\(path) holds \(entry), which is not part of a publication; the publish directory is replaced as a "
                + "whole, so it must be empty or hold only seed.db, seed.db.zst, seed.db.patch.zst, evidence.json, "
                + "SHA256SUMS and "
                + "provenance.intoto.jsonl"
        case .source(let error): "the source failed: \(error)"
        case .embeddedServer(let message): "the embedded reference server failed: \(message)"
        case .signing(let error): "signing failed: \(error)"
        case .locked(let directory, let holder):
            "\(directory) is locked by \(holder.map { "process \($0)" } ?? "another run") (locked): one run "
                + "publishes at a time; run again once it has finished, or pass --wait SECONDS"
        case .interrupted: "interrupted; nothing published"
        case .io(let operation, let path, let code):
            SystemError(operation: operation, path: path, code: code).description
        }
    }

    /// Runs a file operation of the run, its failure as ``io(operation:path:errno:)``.
    static func io<T>(_ operation: () throws(SystemError) -> T) throws(PipelineError) -> T {
        do {
            return try operation()
        } catch {
            throw .io(operation: error.operation, path: error.path, errno: error.code)
        }
    }
}
