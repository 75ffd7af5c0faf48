import Foundation
import SQLiteKit
import _SeedkitTestSupport

/// Runs `body` with a fresh database file in a temporary directory that outlives the connection.
func withDatabase<Result>(
    _ name: String = "test.db", _ body: (Connection, TemporaryDirectory) throws -> Result
) throws -> Result {
    let directory = try TemporaryDirectory(prefix: "sqlitekit")
    // The directory is removed when released; keep it until the connection is closed.
    return try withExtendedLifetime(directory) {
        let connection = try Connection(path: directory.path(name))
        defer { connection.close() }
        return try body(connection, directory)
    }
}

/// The first 100 bytes of a database file (the SQLite header).
func databaseHeader(_ path: String) throws -> [UInt8] {
    let data = try Data(contentsOf: URL(fileURLWithPath: path))
    return Array(data.prefix(100))
}

/// Whether a file exists at `path`.
func fileExists(_ path: String) -> Bool {
    FileManager.default.fileExists(atPath: path)
}
