import Foundation
import SQLiteKit
import SynchroProtocol
import Testing
import _SeedkitTestSupport
@testable import SeedArtifacts
@testable import SeedPipeline
import SeedSources

@Suite(.serialized) struct RehearsalTests {
    let server: RunningServer
    let directory: TemporaryDirectory

    init() throws {
        server = try RunningServer(rows: 120)
        directory = try TemporaryDirectory(prefix: "seedkit-rehearsal")
    }

    /// Exports a seed and installs a copy as `app.db`.
    func installedSeed() throws -> (seed: String, app: String, report: SeedExportReport) {
        let seed = directory.path("seed.db")
        let source = try HTTPExportSource(baseURL: server.baseURL, operatorToken: RunningServer.operatorToken)
        let report = try SeedExporter.export(from: source, to: seed, options: .init(pageLimit: 40))
        let app = directory.path("app.db")
        try FileManager.default.copyItem(atPath: seed, toPath: app)
        return (seed, app, report)
    }

    func options(compare: Bool = false) -> RehearsalOptions {
        RehearsalOptions(server: server.baseURL, credential: "secret-alice", pageLimit: 50, rebuildCompare: compare)
    }

    @Test func aFreshSeedContinuesEveryScopeWithoutRebuilding() throws {
        let (_, app, export) = try installedSeed()
        let report = try SeedRehearsal.run(installed: app, workDirectory: directory.url.path, options: options(compare: true))
        #expect(report.passed)
        #expect(report.scopes.map(\.id) == export.scopes.map(\.id))
        #expect(report.scopes.allSatisfy { $0.continued && $0.verified && !$0.rebuilt && $0.matchesRebuild == true })
        #expect(report.firstSync.connectRequests == 1)
        // The catalog came with the seed: the first sync rebuilds only alice's own scopes.
        #expect(!report.firstSync.scopesRebuilt.contains("catalog"))
        #expect(report.rebuild?.scopesRebuilt.contains("catalog") == true)
    }

    @Test func changesAfterTheExportArrivePulledIncrementally() throws {
        let (_, app, _) = try installedSeed()
        try server.engine.operatorWrite(
            table: "tbl_categories", pk: .number(JSONNumber(1)),
            row: try StrictJSONParser().parse(#"{"fld_category_id":1,"fld_category_name":"renamed after export"}"#))
        let report = try SeedRehearsal.run(installed: app, workDirectory: directory.url.path, options: options(compare: true))
        #expect(report.passed)
        #expect(report.firstSync.rowsApplied >= 1)
        #expect(report.scopes.allSatisfy { $0.continued && $0.matchesRebuild == true })
    }

    @Test func aScopeWhoseSeedRowsWereAlteredIsRebuiltAndTheRehearsalFails() throws {
        let (_, app, _) = try installedSeed()
        let db = try Connection(path: app)
        try db.execute("UPDATE _synchro_meta SET value = '1' WHERE key = 'sync_lock'")
        try db.execute("UPDATE categories SET name = 'tampered' WHERE id = (SELECT min(id) FROM categories)")
        try db.execute("UPDATE _synchro_meta SET value = '0' WHERE key = 'sync_lock'")
        db.close()
        let report = try SeedRehearsal.run(installed: app, workDirectory: directory.url.path, options: options())
        #expect(!report.passed)
        let catalog = try #require(report.scopes.first { $0.id == "catalog" })
        #expect(!catalog.continued)
        #expect(catalog.rebuilt)
    }
}
