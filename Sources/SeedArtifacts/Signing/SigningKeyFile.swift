#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import SystemKit

/// Where signing keys live: a private key in a PEM file of mode 0600 (created once, never overwritten) or in an
/// environment variable (CI secrets), and public keys in PEM files. Key text is never printed or logged.
public enum SigningKeyFile {
    /// Writes a fresh key pair: the private key to `privatePath` (created with mode 0600, refused when it exists)
    /// and the public key to `privatePath + ".pub"`. Returns the public key.
    public static func generate(privatePath: String) throws(SigningError) -> Ed25519PublicKey {
        let publicPath = privatePath + ".pub"
        for path in [privatePath, publicPath] where FileSystem.exists(path) { throw .keyExists(path: path) }
        let key = try Ed25519PrivateKey.generate()
        try create(privatePath, bytes: try key.pem(), mode: 0o600)
        try create(publicPath, bytes: try key.publicKey.pem(), mode: 0o644)
        return key.publicKey
    }

    /// The private key in the file at `path`, which must not be readable by group or others.
    public static func privateKey(path: String) throws(SigningError) -> Ed25519PrivateKey {
        var status = stat()
        guard stat(path, &status) == 0 else { throw .unreadableKey(path: path) }
        guard status.st_mode & 0o077 == 0 else { throw .keyFileTooOpen(path: path) }
        guard let bytes = FileSystem.read(path) else { throw .unreadableKey(path: path) }
        return try Ed25519PrivateKey(pem: bytes, source: path)
    }

    /// The private key in the environment variable `variable` (PEM text).
    public static func privateKey(variable: String, environment: [String: String]) throws(SigningError)
        -> Ed25519PrivateKey
    {
        guard let text = environment[variable], !text.isEmpty else { throw .missingKeyVariable(variable: variable) }
        return try Ed25519PrivateKey(pem: Array(text.utf8), source: "$\(variable)")
    }

    /// The public key in the PEM file at `path`.
    public static func publicKey(path: String) throws(SigningError) -> Ed25519PublicKey {
        guard let bytes = FileSystem.read(path) else { throw .unreadableKey(path: path) }
        return try Ed25519PublicKey(pem: bytes, source: path)
    }

    /// Creates `path` exclusively with `mode` and writes `bytes`, synced; a failure removes the partial file.
    private static func create(_ path: String, bytes: [UInt8], mode: mode_t) throws(SigningError) {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard descriptor >= 0 else {
            if errno == EEXIST { throw .keyExists(path: path) }
            throw .io(operation: "create", path: path, errno: errno)
        }
        defer { close(descriptor) }
        var written = 0
        while written < bytes.count {
            let count = bytes[written...].withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                let code = errno
                unlink(path)
                throw .io(operation: "write", path: path, errno: code)
            }
            written += count
        }
        guard fsync(descriptor) == 0 else {
            let code = errno
            unlink(path)
            throw .io(operation: "sync", path: path, errno: code)
        }
    }
}
