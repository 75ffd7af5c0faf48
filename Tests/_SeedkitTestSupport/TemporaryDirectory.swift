import Foundation

/// A fresh directory under the system temporary folder, removed when the value is released.
public final class TemporaryDirectory: Sendable {
    public let url: URL

    public init(prefix: String = "seedkit-test") throws {
        let name = "\(prefix)-\(UUID().uuidString.lowercased())"
        url = FileManager.default.temporaryDirectory.appendingPathComponent(name, isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    /// The path of `name` inside the directory.
    public func path(_ name: String) -> String {
        url.appendingPathComponent(name).path
    }

    /// Writes `bytes` to `name` inside the directory and returns its path.
    @discardableResult
    public func write(_ name: String, _ bytes: [UInt8]) throws -> String {
        let path = path(name)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// Writes `secret` to a new 0600 file in the directory and returns its path: what a test passes as
    /// `--token-file`, since no command takes a secret on the command line.
    public func secretFile(_ secret: String) throws -> String {
        let path = path(".secret-\(UUID().uuidString.lowercased())")
        guard FileManager.default.createFile(
            atPath: path, contents: Data((secret + "\n").utf8), attributes: [.posixPermissions: 0o600])
        else { throw CocoaError(.fileWriteUnknown) }
        return path
    }

    deinit {
        try? FileManager.default.removeItem(at: url)
    }
}
