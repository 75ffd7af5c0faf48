import Foundation

/// Where the repository and the shared folder beside it are, for tests that read shared data.
public enum RepositoryLayout {
    /// The repository root (the folder holding Package.swift).
    public static var root: URL {
        var url = URL(fileURLWithPath: #filePath)
        while url.path != "/" {
            url.deleteLastPathComponent()
            if FileManager.default.fileExists(atPath: url.appendingPathComponent("Package.swift").path) {
                return url
            }
        }
        fatalError("Package.swift not found above \(#filePath)")
    }

    /// The shared folder: `$SEEDKIT_SHARED` when set, otherwise `../shared` beside the repository.
    public static var shared: URL {
        if let override = ProcessInfo.processInfo.environment["SEEDKIT_SHARED"], !override.isEmpty {
            return URL(fileURLWithPath: override)
        }
        return root.deletingLastPathComponent().appendingPathComponent("shared")
    }

    /// The upstream conformance vector file, when the shared folder holds it.
    public static var canonicalVectors: URL? {
        let url = shared.appendingPathComponent("vectors/canonical-v1.json")
        return FileManager.default.fileExists(atPath: url.path) ? url : nil
    }
}
