/// Why a key could not be made, read or used, or a publication could not be signed; one case per rule.
///
/// No case carries key material: only paths, environment variable names and OpenSSL's failing operation.
public enum SigningError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The key text is not a PEM Ed25519 key of the expected kind (private or public).
    case notEd25519Key(source: String)
    /// The key file could not be read.
    case unreadableKey(path: String)
    /// The environment variable that should hold the private key is unset or empty.
    case missingKeyVariable(variable: String)
    /// A private key file is readable by others than its owner.
    case keyFileTooOpen(path: String)
    /// The destination of a new key exists; keys are never overwritten.
    case keyExists(path: String)
    /// A file to sign or verify is missing, or not a regular file in the signed directory.
    case unreadableArtifact(path: String)
    /// Two files to sign share a name; a statement names subjects by file name.
    case duplicateSubject(name: String)
    /// OpenSSL failed (allocation, key generation, signing); carries the operation.
    case crypto(operation: String)
    /// A file could not be written.
    case io(operation: String, path: String, errno: Int32)

    /// Stable snake_case name of the rule (for scripts and `--json`).
    public var rule: String {
        switch self {
        case .notEd25519Key: "not_ed25519_key"
        case .unreadableKey: "unreadable_key"
        case .missingKeyVariable: "missing_key_variable"
        case .keyFileTooOpen: "key_file_too_open"
        case .keyExists: "key_exists"
        case .unreadableArtifact: "unreadable_artifact"
        case .duplicateSubject: "duplicate_subject"
        case .crypto: "crypto_failed"
        case .io: "io"
        }
    }

    public var description: String {
        switch self {
        case .notEd25519Key(let source): "\(rule): \(source) does not hold a PEM Ed25519 key of the expected kind"
        case .unreadableKey(let path): "\(rule): cannot read the key file \(path)"
        case .missingKeyVariable(let variable): "\(rule): the environment variable \(variable) is unset or empty"
        case .keyFileTooOpen(let path):
            "\(rule): the private key file \(path) is readable by group or others; chmod 600 it"
        case .keyExists(let path): "\(rule): \(path) exists; a key is never overwritten"
        case .unreadableArtifact(let path): "\(rule): \(path) is not a readable regular file"
        case .duplicateSubject(let name): "\(rule): two files are named \(name)"
        case .crypto(let operation): "\(rule): OpenSSL failed to \(operation)"
        case .io(let operation, let path, let code):
            "\(rule): cannot \(operation) \(path): \(String(cString: strerror(code)))"
        }
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
