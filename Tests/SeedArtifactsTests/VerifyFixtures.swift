import Foundation
import SQLiteKit
import SeedArtifacts
import SeedSources
import SynchroProtocol
import _SeedkitTestSupport

/// Real seeds exported from the reference server (demo dataset, 300 catalog products, page limit 100), made once
/// per test process, and helpers that copy and tamper with them.
enum VerifyFixtures {
    /// Rows per export page: the "skipped page" tamper removes this many consecutive rows.
    static let pageLimit: Int64 = 100
    /// Products in the catalog (plus 40 categories).
    static let products = 300

    /// Two exports of the same server state: `first` is the seed under test, `second` another export whose
    /// receipts are bound to a different export ID.
    struct Exports: Sendable {
        let first: String
        let second: String
        let rows: Int64
    }

    /// Where the exports live for the whole test process; removed when it exits.
    static let directory = FileManager.default.temporaryDirectory
        .appendingPathComponent("seedkit-verify-fixture-\(getpid())").path

    static let exports: Result<Exports, ExportFailure> = {
        do {
            let server = try RunningServer(dataset: "demo", rows: products)
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            atexit { try? FileManager.default.removeItem(atPath: VerifyFixtures.directory) }
            let first = directory + "/first.db"
            let second = directory + "/second.db"
            let source = try HTTPExportSource(baseURL: server.baseURL, operatorToken: RunningServer.operatorToken)
            let options = SeedExportOptions(pageLimit: pageLimit)
            let report = try SeedExporter.export(from: source, to: first, options: options)
            _ = try SeedExporter.export(from: source, to: second, options: options)
            return .success(Exports(first: first, second: second, rows: report.rows))
        } catch {
            return .failure(ExportFailure(description: "\(error)"))
        }
    }()

    struct ExportFailure: Error, CustomStringConvertible {
        let description: String
    }

    /// A fresh copy of the clean seed in `directory`.
    static func cleanCopy(in directory: TemporaryDirectory, name: String = "seed.db") throws -> String {
        let path = directory.path(name)
        try FileManager.default.copyItem(atPath: try exports.get().first, toPath: path)
        return path
    }

    /// Runs `sql` on the seed with capture suppressed (so the legacy triggers record nothing) and leaves no
    /// journal behind.
    static func modify(_ path: String, _ sql: String) throws {
        let connection = try Connection(path: path, mode: .readWrite)
        defer { connection.close() }
        try connection.execute("UPDATE _synchro_meta SET value = '1' WHERE key = 'sync_lock'")
        try connection.execute(sql)
        try connection.execute("UPDATE _synchro_meta SET value = '0' WHERE key = 'sync_lock'")
    }

    /// One value read from the seed.
    static func scalar(_ path: String, _ sql: String) throws -> SQLiteValue? {
        let connection = try Connection(path: path, mode: .readOnly)
        defer { connection.close() }
        return try connection.scalar(sql)
    }

    /// The canonical checksum object text of `digest` (a valid checksum that matches nothing in the seed).
    static func checksumText(_ digest: [UInt8]) throws -> String {
        try CanonicalJSON.string(try Checksum(digest: digest).json)
    }

    /// Names in `directory` other than `keeping`.
    static func strayFiles(in directory: TemporaryDirectory, keeping: Set<String>) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory.url.path)
            .filter { !keeping.contains($0) }.sorted()
    }
}
