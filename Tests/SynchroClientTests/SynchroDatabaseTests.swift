import Foundation
import SQLiteKit
import Synchronization
import SynchroClient
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// A scheduler the test drives: scheduled work waits in a list until ``runNext()`` runs it on the test's thread,
/// and waits are recorded (and advance the manual clock) instead of sleeping.
final class ManualSyncScheduler: SyncScheduler {
    private struct Pending {
        let id: Int
        let delay: Duration
        let work: @Sendable () -> Void
    }

    private let state = Mutex<(next: Int, pending: [Pending], waits: [Duration])>((0, [], []))
    let clock: ManualClientClock

    init(clock: ManualClientClock) {
        self.clock = clock
    }

    /// The delays of the work still scheduled, in scheduling order.
    var pendingDelays: [Duration] { state.withLock { $0.pending.map(\.delay) } }

    /// Every wait a cycle asked for.
    var waits: [Duration] { state.withLock { $0.waits } }

    func schedule(after delay: Duration, _ work: @escaping @Sendable () -> Void) -> SyncScheduledTask {
        let id = state.withLock { state -> Int in
            state.next += 1
            state.pending.append(Pending(id: state.next, delay: delay, work: work))
            return state.next
        }
        return SyncScheduledTask { [weak self] in self?.state.withLock { $0.pending.removeAll { $0.id == id } } }
    }

    func wait(for duration: Duration, signal: SyncStopSignal) {
        state.withLock { $0.waits.append(duration) }
        clock.advance(by: duration)
    }

    /// Runs the oldest scheduled work (advancing the clock by its delay) and returns the delay; nil when none.
    @discardableResult
    func runNext() -> Duration? {
        guard let next = state.withLock({ state -> Pending? in
            state.pending.isEmpty ? nil : state.pending.removeFirst()
        }) else { return nil }
        clock.advance(by: next.delay)
        next.work()
        return next.delay
    }
}

/// Collects what observers report.
final class Collector<Value: Sendable>: Sendable {
    private let values = Mutex<[Value]>([])

    var all: [Value] { values.withLock { $0 } }

    func append(_ value: Value) {
        values.withLock { $0.append(value) }
    }
}

@Suite("SynchroDatabase: the public native SDK surface")
struct SynchroDatabaseTests {
    let server: RunningServer
    let directory: TemporaryDirectory
    let transport: CycleTransport
    let clock = ManualClientClock()
    let scheduler: ManualSyncScheduler
    let database: SynchroDatabase

    init() throws {
        server = try RunningServer(rows: 60)
        directory = try TemporaryDirectory(prefix: "synchro-database")
        transport = CycleTransport(server: server)
        let scheduler = ManualSyncScheduler(clock: clock)
        self.scheduler = scheduler
        database = try SynchroDatabase(configuration: Self.configuration(
            path: directory.path("app.db"), transport: transport, scheduler: scheduler))
    }

    static func configuration(
        path: String, transport: CycleTransport, scheduler: ManualSyncScheduler,
        cycle: SyncCycle.Configuration = .init()
    ) -> SynchroDatabaseConfiguration {
        SynchroDatabaseConfiguration(
            path: path, clientID: "sdk-device-1", transport: transport, pageLimit: 40, cycle: cycle,
            syncInterval: .seconds(30), scheduler: scheduler, clock: scheduler.clock.clock, random: RandomSource { 0 })
    }

    func configuration(cycle: SyncCycle.Configuration = .init()) -> SynchroDatabaseConfiguration {
        Self.configuration(path: directory.path("app.db"), transport: transport, scheduler: scheduler, cycle: cycle)
    }

    static let insertNote = "INSERT INTO notes (id, owner_id, title, pinned, updated_at) VALUES (?, 'alice', ?, 0, ?)"

    @Test("start runs one cycle on the scheduler, then schedules the next after the interval")
    func startRunsCycles() throws {
        let states = Collector<SyncState>()
        let observation = database.observeSyncStatus { states.append($0.state) }
        #expect(database.getSyncStatus().state == .localReady)
        #expect(!database.getSyncStatus().isStarted)

        try database.startSync()
        #expect(scheduler.pendingDelays == [.zero])
        #expect(transport.paths.isEmpty, "nothing runs on the caller's thread")
        scheduler.runNext()

        let status = database.getSyncStatus()
        #expect(status.state == .ready)
        #expect(status.isStarted)
        #expect(status.lastError == nil)
        #expect(status.lastSummary?.scopesRebuilt == ["catalog", "user:alice"])
        #expect(scheduler.pendingDelays == [.seconds(30)])
        #expect(Array(states.all.prefix(3)) == [.connecting, .schemaApplying, .ready])
        #expect(states.all.contains(.rebuilding) && states.all.last == .ready)
        #expect(try database.query("SELECT count(*) AS n FROM notes").first?.values.first != .integer(0))

        // A steady cycle with nothing to do is one pull: the connection of the previous cycle stands.
        transport.reset()
        scheduler.runNext()
        #expect(transport.paths == ["/sync/pull"])
        #expect(scheduler.pendingDelays == [.seconds(30)])
        observation.cancel()
    }

    @Test("one owner at a time: a second open fails with a typed error until the first closes")
    func singleOwner() throws {
        #expect(throws: SynchroDatabaseError.storeInUse(path: directory.path("app.db"), holderPID: getpid())) {
            try SynchroDatabase(configuration: configuration())
        }
        database.close()
        let again = try SynchroDatabase(configuration: configuration())
        #expect(again.getSyncStatus().state == .localReady)
        #expect(throws: ApplicationSQLError.closed) { try database.query("SELECT 1") }
        again.close()
    }

    @Test("stop during a rebuild stops at the next step; durable state stays and a restart resumes it")
    func stopAndResume() throws {
        let database = self.database
        transport.before { path, count in
            if path == "/sync/rebuild" && count == 1 { try database.stopSync() }
        }
        try database.startSync()
        scheduler.runNext()
        let stopped = database.getSyncStatus()
        #expect(stopped.state == .stopped)
        #expect(stopped.lastError == .cancelled)
        #expect(!stopped.isStarted)
        #expect(scheduler.pendingDelays.isEmpty)
        #expect(transport.paths == ["/sync/connect", "/sync/rebuild"])
        // The page that was in flight was applied and its attempt kept: the restart continues it.
        let firstID = try #require(rebuildIDs().first)

        transport.before { _, _ in }
        try database.startSync()
        scheduler.runNext()
        #expect(database.getSyncStatus().state == .ready)
        #expect(rebuildIDs()[1] == firstID)
        #expect(rebuildCursors()[1] != nil, "the second request continues from the stored token")
    }

    @Test("syncNow needs a started lifecycle and replaces the interval wait with an immediate cycle")
    func syncNow() throws {
        #expect(throws: SynchroDatabaseError.syncNotStarted) { try database.syncNow() }
        try database.startSync()
        scheduler.runNext()
        #expect(scheduler.pendingDelays == [.seconds(30)])
        try database.syncNow()
        #expect(scheduler.pendingDelays == [.zero])
        try database.stopSync()
        #expect(scheduler.pendingDelays.isEmpty)
        #expect(database.getSyncStatus().state == .stopped)
        #expect(throws: SynchroDatabaseError.syncNotStarted) { try database.syncNow() }
    }

    @Test("lifecycle calls from inside an application transaction are refused")
    func insideTransaction() throws {
        let database = self.database
        for call in [{ try database.startSync() }, { try database.stopSync() }, { try database.syncNow() }] {
            #expect(throws: SynchroDatabaseError.calledInsideApplicationTransaction) {
                try database.transaction { _ in try call() }
            }
        }
        #expect(!database.getSyncStatus().isStarted)
    }

    @Test("writes are pushed by the lifecycle with per-mutation events; rejections are inspected and cleared")
    func mutationEventsAndRejections() throws {
        try database.startSync()
        scheduler.runNext()
        try database.execute(Self.insertNote, [.text("sdk-note-1"), .text("hello"), .text("2026-01-01T00:00:00.000Z")])
        try database.execute("UPDATE products SET title = 'not allowed' WHERE id = (SELECT min(id) FROM products)")
        let retained = try database.inspectRetainedMutationRecords()
        #expect(retained.map(\.state) == [.unsealed, .unsealed])
        #expect(retained.allSatisfy { $0.binding != nil })

        let events = Collector<SyncEvent>()
        let observation = database.observeSyncEvents { events.append($0) }
        try database.syncNow()
        scheduler.runNext()
        #expect(events.all.contains(.mutationAccepted(mutationID: retained[0].mutationID)))
        #expect(events.all.contains(.mutationRejected(mutationID: retained[1].mutationID, code: "policy_rejected")))
        #expect(events.all.contains(.stateChanged(.pushing)))

        let rejected = try database.inspectRejectedMutationRecords()
        #expect(rejected.map(\.mutationID) == [retained[1].mutationID])
        #expect(rejected.first?.code == "policy_rejected")
        guard case .current(let mutationJSON, _)? = rejected.first?.payload else {
            Issue.record("a current rejection carries its JSON")
            return
        }
        #expect(mutationJSON.contains(retained[1].mutationID))
        #expect(try database.clearRejectedMutationRecords() == 1)
        #expect(try database.inspectRejectedMutationRecords().isEmpty)
        #expect(try database.inspectRetainedMutationRecords().map(\.state) == [.accepted, .rejected])
        observation.cancel()
    }

    @Test("retries wait on the scheduler; after the policy's attempts the next cycle waits for the durable deadline")
    func retriesAndDeadline() throws {
        database.close()
        let database = try SynchroDatabase(configuration: configuration(cycle: .init(retry: .init(maxAttempts: 2))))
        try database.startSync()
        scheduler.runNext()
        try server.engine.inject(.rejectRequests(route: "/sync/pull", count: 5, status: 503))
        let events = Collector<SyncEvent>()
        let observation = database.observeSyncEvents { events.append($0) }
        try database.syncNow()
        scheduler.runNext()
        let status = database.getSyncStatus()
        #expect(status.state == .backoff)
        #expect(status.lastError == .retriesExhausted(phase: .pull, attempts: 2, status: 503))
        #expect(scheduler.waits == [.seconds(5)])
        let deadline = try #require(status.nextRetryAtMilliseconds)
        #expect(scheduler.pendingDelays == [.milliseconds(deadline - clock.milliseconds)])
        #expect(events.all.contains(.failed(.retriesExhausted(phase: .pull, attempts: 2, status: 503))))
        observation.cancel()
        database.close()
    }

    @Test("an unsupported schema blocks start until the explicit reset, which recovers and rebuilds")
    func unsupportedThenReset() throws {
        try database.startSync()
        scheduler.runNext()
        try SchemaPublisher(server).publish(transition: "class_4") { $0.removeField("tbl_tasks", "fld_task_due") }
        try database.syncNow()
        scheduler.runNext()
        #expect(database.getSyncStatus().state == .error)
        #expect(scheduler.pendingDelays.isEmpty, "a timer never leaves error")
        let blocking = try #require(database.getSyncStatus().blockingError)
        #expect(blocking.recoveryAction == "schema_reset")

        try database.stopSync()
        #expect(throws: SynchroDatabaseError.syncBlocked(
            operation: "connect", code: "incompatible_schema_transition", recoveryAction: "schema_reset")) {
            try database.startSync()
        }
        try database.resetSchema()
        scheduler.runNext()
        let status = database.getSyncStatus()
        #expect(status.state == .ready)
        #expect(status.blockingError == nil)
        #expect(status.lastSummary?.scopesRebuilt == ["catalog", "user:alice"])
        let connection = try Connection(path: directory.path("app.db"), mode: .readOnly)
        defer { connection.close() }
        #expect(try connection.scalar("SELECT count(*) FROM pragma_table_info('tasks') WHERE name = 'due_date'")
            == .integer(0))
        #expect(throws: SynchroDatabaseError.schemaResetNotPending) { try database.resetSchema() }
    }

    @Test("status events report rebuilds, schema application and backoff; a schema_incompatible rejection is inspected")
    func statusEventsAndSchemaIncompatibleRejection() throws {
        let events = Collector<SyncEvent>()
        let observation = database.observeSyncEvents { events.append($0) }
        try database.startSync()
        scheduler.runNext()
        for scope in ["catalog", "user:alice"] {
            #expect(events.all.contains(.rebuildRequested(scope: scope)))
            #expect(events.all.contains(.rebuildCompleted(scope: scope)))
        }

        // A Class 2 publication and one 503 on the next pull: the schema event and the scheduled retry.
        try SchemaPublisher(server).publish(transition: "class_2") {
            $0.addField("tbl_products", "fld_product_origin", type: "string")
        }
        try server.engine.inject(.rejectRequests(route: "/sync/pull", count: 1, status: 503))
        try database.syncNow()
        scheduler.runNext()
        #expect(events.all.contains(.schemaApplied(action: "replace")))
        #expect(events.all.contains {
            if case .retryScheduled(.pull, 1, 503, _, _) = $0 { return true }
            return false
        })

        // Intent authored on a field that a Class 4 change then removes: after the reset it ends as the server
        // decides, `schema_incompatible`, retained and inspectable through the public surface.
        try database.execute("UPDATE tasks SET due_date = '2026-02-02' WHERE id = (SELECT min(id) FROM tasks)")
        let authored = try #require(try database.inspectRetainedMutationRecords().last?.mutationID)
        try SchemaPublisher(server).publish(transition: "class_4") { $0.removeField("tbl_tasks", "fld_task_due") }
        try database.syncNow()
        scheduler.runNext()
        #expect(events.all.contains { if case .failed = $0 { return true } else { return false } })
        try database.resetSchema()
        scheduler.runNext()
        let rejected = try database.inspectRejectedMutationRecords()
        #expect(rejected.map(\.mutationID) == [authored])
        #expect(rejected.first?.code == "schema_incompatible")
        #expect(events.all.contains(.mutationRejected(mutationID: authored, code: "schema_incompatible")))
        observation.cancel()
    }

    @Test("the default scheduler runs cycles on a background queue; a stop wakes a retry wait at once")
    func defaultScheduler() throws {
        database.close()
        var configuration = configuration()
        configuration.scheduler = DispatchSyncScheduler(label: "synchro.test")
        let database = try SynchroDatabase(configuration: configuration)
        let caller = pthread_self()
        let done = DispatchSemaphore(value: 0)
        let onCaller = Mutex<Bool?>(nil)
        let observation = database.observeSyncStatus { status in
            guard status.lastSummary != nil, status.state == .ready else { return }
            onCaller.withLock { if $0 == nil { $0 = pthread_equal(pthread_self(), caller) != 0 } }
            done.signal()
        }
        try database.startSync()
        #expect(done.wait(timeout: .now() + 60) == .success, "the first cycle ran")
        #expect(onCaller.withLock { $0 } == false)
        try database.stopSync()
        observation.cancel()
        database.close()

        let signal = SyncStopSignal()
        signal.stop()
        // Returns at once: a stopped lifecycle never waits (a regression would hang this test for an hour).
        DispatchSyncScheduler().wait(for: .seconds(3600), signal: signal)
        #expect(signal.isStopped)
    }

    @Test("a blocking error recorded while sync runs refuses syncNow's cycle; only retryAfterError resumes")
    func syncNowObeysBlockingError() throws {
        try database.startSync()
        scheduler.runNext()
        try BlockingErrorTests.storeBlockingError(StoreFileAccess(path: directory.path("app.db")))
        transport.reset()

        try database.syncNow()
        scheduler.runNext()
        let refused = database.getSyncStatus()
        let blocked = SyncCycleError.blocked(
            operation: "pull", code: "sync_integrity_failure", recoveryAction: "retry")
        #expect(refused.lastError == blocked)
        #expect(refused.state == .error)
        #expect(transport.paths.isEmpty)
        #expect(scheduler.pendingDelays.isEmpty, "a timer never leaves error")
        #expect(throws: SynchroDatabaseError.syncBlocked(
            operation: "pull", code: "sync_integrity_failure", recoveryAction: "retry")) { try database.startSync() }

        try database.retryAfterError()
        scheduler.runNext()
        let resumed = database.getSyncStatus()
        #expect(resumed.state == .ready && resumed.blockingError == nil && resumed.lastError == nil)
        #expect(transport.paths == ["/sync/connect", "/sync/pull"])
    }

    @Test("retryAfterError refuses an error whose recovery is not retry; a reopened client starts in error")
    func retryAfterErrorNeedsRetryRecovery() throws {
        try BlockingErrorTests.storeBlockingError(
            StoreFileAccess(path: directory.path("app.db")), recoveryAction: "schema_reset")
        #expect(throws: SynchroDatabaseError.syncBlocked(
            operation: "pull", code: "sync_integrity_failure", recoveryAction: "schema_reset")) {
            try database.retryAfterError()
        }
        #expect(database.getSyncStatus().blockingError?.recoveryAction == "schema_reset")
        #expect(scheduler.pendingDelays.isEmpty)

        // Opened with a stored blocking error, the client starts in `error` (client-store §11 "Construction").
        database.close()
        let reopened = try SynchroDatabase(configuration: configuration())
        #expect(reopened.getSyncStatus().state == .error)
        reopened.close()
    }

    @Test("the deprecated inspection calls forward to the current ones and return current records only")
    func deprecatedInspectionForwards() throws {
        try database.startSync()
        scheduler.runNext()
        try database.execute(Self.insertNote, [.text("sdk-note-9"), .text("kept"), .text("2026-01-01T00:00:00.000Z")])
        try database.execute("UPDATE products SET title = 'not allowed' WHERE id = (SELECT min(id) FROM products)")
        let legacy: any DeprecatedInspection = database
        let unsealed = try database.inspectRetainedMutationRecords()
        #expect(try legacy.inspectPendingMutations() == unsealed)
        #expect(try legacy.inspectRetainedMutations() == unsealed)
        #expect(try legacy.inspectRejectedMutations().isEmpty)

        try database.syncNow()
        scheduler.runNext()
        // Pending means unresolved: accepted and rejected entries are retained, not pending.
        #expect(try legacy.inspectPendingMutations().isEmpty)
        #expect(try legacy.inspectRetainedMutations() == (try database.inspectRetainedMutationRecords()))
        #expect(try legacy.inspectRetainedMutations().map(\.state) == [.accepted, .rejected])
        #expect(try legacy.inspectRejectedMutations() == (try database.inspectRejectedMutationRecords()))
        #expect(try legacy.inspectRejectedMutations().map(\.code) == ["policy_rejected"])
    }

    @Test("the deprecated inspection calls fail when a legacy record is present; the current ones return it")
    func deprecatedInspectionRefusesLegacyRecords() throws {
        let file = StoreFileAccess(path: directory.path("app.db"))
        try file.run("""
            INSERT INTO _synchro_pending_changes
                (mutation_id, capture_uuid, table_name, record_id, operation, client_version, lifecycle_state,
                 source_kind, created_at, updated_at)
            VALUES ('00000000-0000-5000-8000-00000000e9a1', '00000000-0000-5000-8000-00000000e9a1', 'notes', 'n-old',
                    'insert', '2025-01-01T00:00:00.000000Z', 'legacy_blocked', 'legacy_import',
                    '2025-01-01T00:00:00.000Z', '2025-01-01T00:00:00.000Z')
            """)
        try file.run("""
            INSERT INTO _synchro_rejected_mutations
                (mutation_id, table_name, record_id, status, code, created_at, updated_at)
            VALUES ('00000000-0000-5000-8000-00000000e9a2', 'notes', 'n-older', 'conflict', 'version_conflict',
                    '2025-01-01T00:00:00.000Z', '2025-01-01T00:00:00.000Z')
            """)
        let legacy: any DeprecatedInspection = database

        #expect(throws: SynchroDatabaseError.legacyRecordPresent(mutationID: "00000000-0000-5000-8000-00000000e9a1")) {
            try legacy.inspectPendingMutations()
        }
        #expect(throws: SynchroDatabaseError.legacyRecordPresent(mutationID: "00000000-0000-5000-8000-00000000e9a1")) {
            try legacy.inspectRetainedMutations()
        }
        #expect(throws: SynchroDatabaseError.legacyRecordPresent(mutationID: "00000000-0000-5000-8000-00000000e9a2")) {
            try legacy.inspectRejectedMutations()
        }
        #expect(try database.inspectRetainedMutationRecords().map(\.binding) == [nil])
        #expect(try database.inspectRejectedMutationRecords().map(\.payload) == [.legacy])
    }

    @Test("a retained record with some key bindings, or a rejection with one JSON value, fails inspection")
    func partialRecordsFailInspection() throws {
        let file = StoreFileAccess(path: directory.path("app.db"))
        // A table ID without the key field, key type and authored schema: neither current nor legacy.
        try file.run("""
            INSERT INTO _synchro_pending_changes
                (mutation_id, capture_uuid, table_id, table_name, record_id, operation, client_version,
                 lifecycle_state, source_kind, created_at, updated_at)
            VALUES ('00000000-0000-5000-8000-00000000e9b1', '00000000-0000-5000-8000-00000000e9b1', 'tbl_notes',
                    'notes', 'n-half', 'insert', '2025-01-01T00:00:00.000000Z', 'legacy_blocked', 'legacy_import',
                    '2025-01-01T00:00:00.000Z', '2025-01-01T00:00:00.000Z')
            """)
        let retained = try #require(throws: SynchroDatabaseError.self) { try database.inspectRetainedMutationRecords() }
        #expect(retained.rule == "store.ledger_integrity.partial_bindings")
        try file.run("DELETE FROM _synchro_pending_changes")

        // The mutation JSON without the rejection JSON.
        try file.run("""
            INSERT INTO _synchro_rejected_mutations
                (mutation_id, table_name, record_id, status, code, created_at, updated_at, mutation_json)
            VALUES ('00000000-0000-5000-8000-00000000e9b2', 'notes', 'n-half', 'conflict', 'version_conflict',
                    '2025-01-01T00:00:00.000Z', '2025-01-01T00:00:00.000Z', '{}')
            """)
        #expect(throws: SynchroDatabaseError.inconsistentRecord(
            mutationID: "00000000-0000-5000-8000-00000000e9b2", rule: "partial_json")) {
            try database.inspectRejectedMutationRecords()
        }
    }

    private func rebuildBodies() -> [JSONObject] {
        transport.bodies("/sync/rebuild").compactMap { (try? StrictJSONParser().parse($0))?.objectValue }
    }

    private func rebuildIDs() -> [String] {
        rebuildBodies().compactMap { $0["rebuild_id"]?.stringValue }
    }

    private func rebuildCursors() -> [String?] {
        rebuildBodies().map { $0["cursor"]?.stringValue }
    }
}

/// The deprecated inspection calls of the contract's SDK surface, reached through a protocol so that the tests
/// calling them are not themselves deprecation warnings (the test target builds with warnings as errors).
protocol DeprecatedInspection {
    func inspectPendingMutations() throws(SynchroDatabaseError) -> [PendingMutation]
    func inspectRetainedMutations() throws(SynchroDatabaseError) -> [PendingMutation]
    func inspectRejectedMutations() throws(SynchroDatabaseError) -> [RejectedMutationRecord]
}

extension SynchroDatabase: DeprecatedInspection {}

/// Writes to a store's file on a connection of its own, as another program (or an upstream SDK build) would.
struct StoreFileAccess {
    let path: String

    func run(_ sql: String, _ arguments: [SQLiteValue] = []) throws {
        let connection = try Connection(path: path, mode: .readWrite)
        defer { connection.close() }
        try connection.setBusyTimeout(milliseconds: 5_000)
        try connection.run(sql, arguments)
    }
}
