import Foundation
import SynchroClient
import Testing
import _SeedkitTestSupport

/// The page limit is the library's rule, not only the CLI's (client contract "Native backoff": an invalid local
/// limit is rejected before transmission and never clamped; `spec/wire-protocol.md` §9: 1…1000).
@Suite("Page limit")
struct PageLimitTests {
    @Test("a cycle with a page limit outside 1…1000 fails with a typed error naming the range and sends nothing",
          arguments: [0, -1, 1001, Int64.max])
    func cycleRefuses(limit: Int64) throws {
        let fixture = try SyncFixture(rows: 5, pageLimit: 40)
        let transport = CycleTransport(server: fixture.server)
        let cycle = SyncCycle(
            context: SyncContext(store: fixture.store, transport: transport, pageLimit: limit), delay: { _ in })
        #expect(throws: SyncCycleError.invalidPageLimit(limit: limit, allowed: 1...1000)) { try cycle.run() }
        #expect(transport.paths.isEmpty)
    }

    @Test("a SynchroDatabase configured with a page limit outside 1…1000 does not open", arguments: [0, 1001])
    func databaseRefuses(limit: Int64) throws {
        let fixture = try SyncFixture(rows: 5, pageLimit: 40)
        let directory = try TemporaryDirectory()
        let configuration = SynchroDatabaseConfiguration(
            path: directory.path("app.db"), clientID: UUID().uuidString.lowercased(),
            transport: CycleTransport(server: fixture.server), pageLimit: limit)
        #expect(throws: SynchroDatabaseError.invalidPageLimit(limit: limit, allowed: 1...1000)) {
            _ = try SynchroDatabase(configuration: configuration)
        }
        #expect(!FileManager.default.fileExists(atPath: directory.path("app.db")))
    }
}
