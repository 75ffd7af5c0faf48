import Foundation
import SQLiteKit
import SynchroClient
import SynchroProtocol
import Testing
import _SeedkitTestSupport
import SynchroStore

/// A stored blocking error (`spec/client-store.md` §4.12, §11) refuses every cycle, whatever started it — a bare
/// ``SyncCycle`` (as `seedkit sync` runs it), ``SyncCycle/runUntilCurrent(maxCycles:)``, an explicit rebuild —
/// before any request or write, and only its recovery action lifts it: `schema_reset` by the explicit reset,
/// `retry` by the explicit acknowledgement, `none` never (client contract, "Push limits at sealing").
@Suite("Blocking errors refuse every cycle")
struct BlockingErrorTests {
    @Test("the sealer's push envelope error (recovery none) refuses every entry point and nothing lifts it")
    func pushEnvelopeErrorRefusesEveryRun() throws {
        let server = try RunningServer(rows: 20)
        let transport = CycleTransport(server: server)
        let fixture = try StoreFixture(clientID: String(repeating: "c", count: PushLimits.maxRequestBodyOctets))
        // A connected store: a generation and the bound client ID (which push presents, not the configured one).
        try fixture.inspect { connection in
            try connection.run("INSERT INTO _synchro_meta (key, value) VALUES ('client_generation', '1')")
            try connection.run(
                "INSERT INTO _synchro_meta (key, value) VALUES ('client_server_id', ?)",
                [.text(fixture.store.configuration.clientID)])
        }
        try fixture.store.execute(taskInsertSQL("t-1"))
        #expect(throws: PushError.reservedEnvelopeTooLarge) { try BatchSealer(store: fixture.store).nextBatch() }
        let before = try fixture.inspect(databaseFingerprint)
        let status = SyncStatus()
        let cycle = SyncCycle(
            context: SyncContext(store: fixture.store, transport: transport, pageLimit: 40), delay: { _ in },
            status: status)
        let blocked = SyncCycleError.blocked(operation: "push", code: "invalid_request", recoveryAction: "none")

        #expect(throws: blocked) { try cycle.run() }
        #expect(status.state == .error)
        #expect(throws: blocked) { try cycle.runUntilCurrent() }
        #expect(throws: blocked) { try cycle.run(rebuilding: nil) }
        #expect(throws: SyncCycleError.schemaResetNotPending) { try cycle.runSchemaReset() }
        #expect(throws: blocked) { try cycle.acknowledgeBlockingError() }

        #expect(transport.paths.isEmpty)
        #expect(status.state == .error)
        #expect(try fixture.inspect(databaseFingerprint) == before)
        #expect(blocked.description.contains("push") && blocked.description.contains("invalid_request"))
    }

    @Test("a refused run from stopped passes through local_ready into error, never into a network state")
    func refusalFromStopped() throws {
        let server = try RunningServer(rows: 20)
        let transport = CycleTransport(server: server)
        let fixture = try StoreFixture()
        let status = SyncStatus()
        let context = SyncContext(store: fixture.store, transport: transport, pageLimit: 40)
        // A run stopped before its first step leaves the machine in `stopped`.
        #expect(throws: SyncCycleError.cancelled) {
            try SyncCycle(context: context, delay: { _ in }, isCancelled: { true }, status: status).run()
        }
        #expect(status.state == .stopped)
        try Self.storeBlockingError(fixture, recoveryAction: "retry")
        let recorder = Collector<SyncState>()
        let observation = status.observe { recorder.append($0) }
        let cycle = SyncCycle(context: context, delay: { _ in }, status: status)

        #expect(throws: SyncCycleError.self) { try cycle.run() }

        #expect(recorder.all == [.localReady, .error])
        #expect(transport.paths.isEmpty)
        observation.cancel()
    }

    /// A store synced once by a cycle over a recording transport, and that cycle.
    private static func syncedCycle() throws -> (SyncFixture, CycleTransport, SyncCycle) {
        let fixture = try SyncFixture(rows: 60, pageLimit: 40)
        let transport = CycleTransport(server: fixture.server)
        let cycle = CycleRecorder().cycle(fixture.context(over: transport))
        _ = try cycle.run()
        return (fixture, transport, cycle)
    }

    @Test("an unsupported schema refuses bare cycles without a request until the explicit reset recovers it")
    func unsupportedRefusesUntilReset() throws {
        let (fixture, transport, cycle) = try Self.syncedCycle()
        try SchemaPublisher(fixture.server).publish(transition: "class_4") {
            $0.removeField("tbl_tasks", "fld_task_due")
        }
        #expect(throws: SyncCycleError.self) { try cycle.run() }
        transport.reset()

        let blocked = SyncCycleError.blocked(
            operation: "connect", code: "incompatible_schema_transition", recoveryAction: "schema_reset")
        #expect(throws: blocked) { try cycle.run() }
        #expect(throws: blocked) { try cycle.runUntilCurrent() }
        #expect(throws: blocked) { try cycle.acknowledgeBlockingError() }
        #expect(transport.paths.isEmpty)

        let reset = try cycle.runSchemaReset()
        #expect(reset.scopesRebuilt == ["catalog", "user:alice"])
        #expect(try fixture.count("SELECT count(*) FROM _synchro_blocking_error") == 0)
        transport.reset()
        _ = try cycle.run()
        #expect(transport.paths == ["/sync/connect", "/sync/pull"])
    }

    @Test("a retry blocking error refuses until explicitly acknowledged; the acknowledgement changes nothing else")
    func retryErrorNeedsAcknowledgement() throws {
        let (fixture, transport, cycle) = try Self.syncedCycle()
        try Self.storeBlockingError(fixture.storeFixture, recoveryAction: "retry")
        transport.reset()

        #expect(throws: SyncCycleError.blocked(
            operation: "pull", code: "sync_integrity_failure", recoveryAction: "retry")) { try cycle.run() }
        #expect(transport.paths.isEmpty)
        let before = try fixture.storeFixture.inspect(databaseFingerprint)

        #expect(try cycle.acknowledgeBlockingError())
        let after = try fixture.storeFixture.inspect(databaseFingerprint)
        let other = { (entry: String) in !entry.hasPrefix("_synchro_blocking_error:") }
        #expect(after.filter(other) == before.filter(other))
        #expect(after.contains("_synchro_blocking_error: []"))
        #expect(try cycle.acknowledgeBlockingError() == false)
        _ = try cycle.run()
        #expect(transport.paths == ["/sync/connect", "/sync/pull"])
    }

    /// Stores a non-retryable pull failure with `recoveryAction`, as an upstream-written file may carry one.
    static func storeBlockingError(_ fixture: StoreFixture, recoveryAction: String = "retry") throws {
        try storeBlockingError(StoreFileAccess(path: fixture.path), recoveryAction: recoveryAction)
    }

    static func storeBlockingError(_ file: StoreFileAccess, recoveryAction: String = "retry") throws {
        try file.run("""
            INSERT INTO _synchro_blocking_error
                (singleton, operation, code, retryable, message, recovery_action, metadata_json, created_at)
            VALUES (1, 'pull', 'sync_integrity_failure', 0, 'sync operation failed', ?, '{}',
                    '2026-01-01T00:00:00.000Z')
            """, [.text(recoveryAction)])
    }
}
