import Foundation
import SynchroClient
import SynchroStore
import Testing
import _SeedkitTestSupport

/// The client ID is chosen and stored before the first connect is sent (issue #16, item 4; client contract,
/// "Client and mutation identifiers": identities are persisted before the request can be transmitted), so a first
/// connect whose answer is lost leaves the store bound to the identity the server may have registered.
@Suite("Client identity before the first connect")
struct ClientIdentityTests {
    /// A transport whose every request is lost after it was sent.
    struct LostTransport: SyncTransport {
        struct Lost: Error {}
        func post(path: String, body: [UInt8]) throws -> SyncReply { throw Lost() }
    }

    @Test("a first connect whose answer is lost leaves the store bound to the ID it presented")
    func boundBeforeFirstConnect() throws {
        let fixture = try SyncFixture(rows: 20, pageLimit: 40)
        #expect(try fixture.store.meta(.clientServerID) == nil)
        let context = SyncContext(store: fixture.store, transport: LostTransport(), pageLimit: 40)
        #expect(throws: SyncError.self) { try ConnectExchange(context: context).run() }
        #expect(try fixture.store.meta(.clientServerID) == fixture.store.configuration.clientID)
        #expect(try fixture.store.meta(.clientGeneration) == nil)
    }
}
