import Foundation
import SQLiteKit
import SynchroClient
import SynchroProtocol

/// What a rehearsal runs as.
public struct RehearsalOptions: Sendable {
    /// The server's base URL.
    public var server: String
    /// The test user's bearer credential (never printed).
    public var credential: String
    /// The client ID the rehearsal device registers; a new UUID when nil.
    public var clientID: String?
    public var appVersion: String
    public var pageLimit: Int64
    /// Also rebuild every portable scope from the server into a fresh store and compare digests.
    public var rebuildCompare: Bool
    /// Request time limit, retries and their announcement.
    public var network = NetworkSettings()

    public init(
        server: String, credential: String, clientID: String? = nil, appVersion: String = "1.0.0",
        pageLimit: Int64 = 1000, rebuildCompare: Bool = false
    ) {
        self.server = server
        self.credential = credential
        self.clientID = clientID
        self.appVersion = appVersion
        self.pageLimit = pageLimit
        self.rebuildCompare = rebuildCompare
    }
}

/// What a device would experience on its first sync after installing the seed.
public struct RehearsalReport: Sendable {
    /// One seeded scope.
    public struct Scope: Sendable, Equatable {
        public let id: String
        /// Rows the seed carried for the scope.
        public let seededRows: Int64
        /// The server continued the scope from the seed boundary (non-null cursor on connect).
        public let continued: Bool
        /// The scope was rebuilt from the server during the first sync (the seed did not help).
        public let rebuilt: Bool
        /// The terminal checksum of the pull to the head verified.
        public let verified: Bool
        /// With rebuild comparison: the continued scope's digest equals a fresh rebuild's; nil otherwise.
        public let matchesRebuild: Bool?
    }

    public let scopes: [Scope]
    /// The first sync's requests by endpoint and the rows it applied on top of the seed.
    public let firstSync: SyncSummary
    /// Requests and rows of the fresh rebuild used for comparison, when requested.
    public let rebuild: SyncSummary?
    public let seconds: Double

    /// Every seeded scope continued, verified and (when compared) matched a fresh rebuild.
    public var passed: Bool {
        !scopes.isEmpty && scopes.allSatisfy { $0.continued && !$0.rebuilt && $0.verified && $0.matchesRebuild != false }
            || scopes.isEmpty
    }
}

/// Why a rehearsal could not run (a failing device experience is a report, not an error).
public enum RehearsalError: Error, Sendable, CustomStringConvertible {
    case store(String)
    case transport(String)
    case sync(SyncCycleError)

    public var rule: String {
        switch self {
        case .store: "store_failed"
        case .transport: "transport_failed"
        case .sync(let error): error.networkRule ?? "sync_failed"
        }
    }

    /// Whether the first sync's retries ran out (exit status 4 of `rehearse`).
    public var retriesExhausted: Bool {
        if case .sync(.retriesExhausted) = self { return true }
        return false
    }

    public var description: String {
        switch self {
        case .store(let message): "the rehearsal database failed: \(message)"
        case .transport(let message): "cannot reach the server: \(message)"
        case .sync(let error): "the first sync failed: \(error)"
        }
    }
}

/// Rehearses a seed as a device would (ARCHITECTURE.md, "Build a seed"): on an installed copy, the first
/// authenticated sync presents the receipts; every seeded scope must come back with a continuation cursor,
/// pull to the head and verify its terminal checksum; optionally a fresh rebuild of every portable scope
/// must reach the same digests.
public enum SeedRehearsal {
    /// Runs the first sync on `database`, a seed already installed the way a device installs it.
    public static func run(
        installed database: String, workDirectory: String, options: RehearsalOptions,
        events: @escaping @Sendable (SyncEvent) -> Void = { _ in }
    ) throws(RehearsalError) -> RehearsalReport {
        let started = ContinuousClock.now
        let seeded = try seededScopes(database)
        let clientID = options.clientID ?? UUID().uuidString.lowercased()
        let first = try sync(database: database, clientID: clientID, options: options, events: events)
        let headChecksums = try checksums(database)

        var rebuild: SyncSummary?
        var rebuiltChecksums: [String: String] = [:]
        if options.rebuildCompare {
            let fresh = URL(fileURLWithPath: workDirectory).appendingPathComponent("rebuild-compare.db").path
            for suffix in ["", "-wal", "-shm", "-journal"] { unlink(fresh + suffix) }
            rebuild = try sync(
                database: fresh, clientID: UUID().uuidString.lowercased(), options: options, events: { _ in })
            rebuiltChecksums = try checksums(fresh)
        }

        let scopes = seeded.map { scope -> RehearsalReport.Scope in
            let outcome = first.seedReceipts.first { $0.scopeID == scope.id }
            let head = headChecksums[scope.id]
            return RehearsalReport.Scope(
                id: scope.id, seededRows: scope.rows, continued: outcome?.disposition == .continued,
                rebuilt: first.scopesRebuilt.contains(scope.id),
                verified: first.scopesVerified.contains(scope.id) && head != nil,
                matchesRebuild: options.rebuildCompare ? (head != nil && head == rebuiltChecksums[scope.id]) : nil)
        }
        let elapsed = ContinuousClock.now - started
        return RehearsalReport(
            scopes: scopes, firstSync: first, rebuild: rebuild,
            seconds: Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
    }

    private static func sync(
        database: String, clientID: String, options: RehearsalOptions, events: @escaping @Sendable (SyncEvent) -> Void
    ) throws(RehearsalError) -> SyncSummary {
        let store: ClientStore
        do {
            store = try ClientStore(configuration: ClientStoreConfiguration(path: database, clientID: clientID))
        } catch {
            throw .store("\(error)")
        }
        defer { store.close() }
        let transport: HTTPSyncTransport
        do {
            transport = try HTTPSyncTransport(
                baseURL: options.server, credential: options.credential, appVersion: options.appVersion,
                timeout: options.network.timeout)
        } catch {
            throw .transport("\(error)")
        }
        let context = SyncContext(
            store: store, transport: transport, platform: "linux", appVersion: options.appVersion,
            pageLimit: options.pageLimit)
        do {
            return try SyncCycle(
                context: context, configuration: SyncCycle.Configuration(retry: options.network.syncRetryPolicy),
                delay: options.network.sleep,
                events: options.network.announcingRetries(server: options.server, events)
            ).run()
        } catch {
            throw .sync(error)
        }
    }

    /// The scopes the seed carries receipts for, with their cardinalities, before the first sync.
    private static func seededScopes(_ database: String) throws(RehearsalError) -> [(id: String, rows: Int64)] {
        do {
            let db = try Connection(path: database, mode: .readOnly)
            defer { db.close() }
            return try db.query("SELECT scope_id, cardinality FROM _synchro_seed_receipts ORDER BY scope_id") {
                (try $0.text(at: 0), $0.int64(at: 1))
            }
        } catch {
            throw .store("\(error)")
        }
    }

    /// Scope ID → stored checksum JSON of every scope with a cursor.
    private static func checksums(_ database: String) throws(RehearsalError) -> [String: String] {
        do {
            let db = try Connection(path: database, mode: .readOnly)
            defer { db.close() }
            let rows = try db.query(
                "SELECT scope_id, checksum FROM _synchro_scopes WHERE cursor IS NOT NULL AND checksum IS NOT NULL"
            ) { (try $0.text(at: 0), try $0.text(at: 1)) }
            return Dictionary(rows, uniquingKeysWith: { first, _ in first })
        } catch {
            throw .store("\(error)")
        }
    }
}

extension SyncCycleError {
    /// The network kind of a failure that got no reply (`connection_refused`, `dns_failure`, `tls_failure`,
    /// `timeout`, …) or `retries_exhausted`; nil for any other failure.
    public var networkRule: String? {
        switch self {
        case .sync(_, .transport(let failure)), .push(.transport(let failure)): failure.rule
        case .retriesExhausted: "retries_exhausted"
        default: nil
        }
    }
}
