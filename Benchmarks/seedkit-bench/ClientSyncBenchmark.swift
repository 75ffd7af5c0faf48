import Foundation
import SQLiteKit
import SynchroClient
import SynchroHTTP
import SynchroProtocol
import Synchronization

extension Benchmark {
    static let clientSync = Benchmark(
        name: "client.sync",
        summary: "initial sync of the 100,000-row demo scopes through the client engine over loopback HTTP (fresh "
            + "store: connect, rebuild of every scope, pull to the head, every digest verified; goal ≥ 50,000 "
            + "rows/s), then steady sync cycles of the warm client; baseline: raw SQLite insert of the same rows"
    ) { options in
        try ClientSyncBenchmark(options: options).figures()
    }
}

/// The headless client engine end to end against the in-process reference server: ``SyncCycle`` with the libcurl
/// transport, a store file of its own, the page limit at its maximum (1000).
private struct ClientSyncBenchmark {
    static let pageLimit: Int64 = 1000

    let options: BenchmarkOptions

    func figures() throws -> [BenchmarkFigure] {
        let server = try BenchServer(catalogRows: max(1, Int(100_000 * options.scale)))
        let transport = try TimedTransport(baseURL: server.baseURL)
        let initial = try initialSyncs(server, transport)
        let raw = try RawSeedInsert(seed: initial.warmStore, scratch: server.scratchPath("raw.db"))
            .rowsPerSecond(iterations: options.iterations)
        let store = try ClientStore(configuration: ClientStoreConfiguration(
            path: initial.warmStore, clientID: initial.warmClientID))
        defer { store.close() }
        let cycle = SyncCycle(
            context: SyncContext(
                store: store, transport: transport, platform: "bench", appVersion: "1.0.0", pageLimit: Self.pageLimit),
            delay: { _ in })
        let cycles = max(10, options.iterations)
        let idle = try steadyCycles(cycle, transport, count: cycles) { _ in }
        let changed = try steadyCycles(cycle, transport, count: cycles) { round in
            try touchCategory(server, round: round)
        }

        let rows = Double(initial.rows)
        let baseline = BenchmarkFigure.Baseline(value: raw, unit: "rows/s raw SQLite insert")
        let perCPU = "rows per CPU-second"
        var figures = [
            BenchmarkFigure(name: "client.sync.rows", value: rows, unit: "rows (every assigned scope)"),
            BenchmarkFigure(
                name: "client.sync.initial", value: rows / initial.wall.median.seconds, unit: "rows/s",
                baseline: baseline),
            BenchmarkFigure(
                name: "client.sync.initial, best run", value: rows / initial.wall.best.seconds, unit: "rows/s",
                baseline: baseline),
            BenchmarkFigure(
                name: "client.sync.initial engine-thread CPU", value: rows / initial.clientCPU.median.seconds,
                unit: perCPU + " (the cycle's thread: page transactions, finality; rebuild pages are received, "
                    + "parsed and verified on a second thread)"),
            BenchmarkFigure(
                name: "client.sync.initial process CPU", value: rows / initial.processCPU.median.seconds,
                unit: perCPU + " (client + in-process server)"),
        ]
        for (label, steady) in [("idle", idle), ("one-change", changed)] {
            figures += [
                BenchmarkFigure(
                    name: "client.sync.steady.\(label) cycle median", value: steady.cycles.median.milliseconds,
                    unit: "ms (connect + pull\(label == "idle" ? "" : " + apply + verify"))"),
                BenchmarkFigure(
                    name: "client.sync.steady.\(label) cycle p95", value: steady.cycles.p95.milliseconds, unit: "ms"),
                BenchmarkFigure(
                    name: "client.sync.steady.\(label) pull request median",
                    value: steady.pulls.median.milliseconds, unit: "ms (HTTP round trip)"),
                BenchmarkFigure(
                    name: "client.sync.steady.\(label) pull request p95", value: steady.pulls.p95.milliseconds,
                    unit: "ms"),
                BenchmarkFigure(
                    name: "client.sync.steady.\(label) cycle client-thread CPU median",
                    value: steady.cycleCPU.median.milliseconds, unit: "ms"),
            ]
        }
        // Issue #21 item 5: a one-row change costs that row plus one pass over stored digests (goal ≤ 10× idle).
        figures.append(BenchmarkFigure(
            name: "client.sync.steady.one-change vs idle", value: changed.cycles.median.milliseconds,
            unit: "ms one-change cycle median (goal ratio ≤ 10)",
            baseline: BenchmarkFigure.Baseline(value: idle.cycles.median.milliseconds, unit: "ms idle cycle median")))
        return figures
    }

    /// Wall and CPU time of the initial syncs, each into a fresh store file.
    struct InitialSyncs {
        var rows = 0
        var wall = Distribution()
        var clientCPU = Distribution()
        var processCPU = Distribution()
        /// The store of the last run, kept for the steady cycles and the raw baseline.
        var warmStore = ""
        var warmClientID = ""
    }

    private func initialSyncs(_ server: BenchServer, _ transport: TimedTransport) throws -> InitialSyncs {
        var result = InitialSyncs()
        let clock = ContinuousClock()
        let runs = max(1, min(3, options.iterations))
        for run in 0..<runs {
            let path = server.scratchPath("client-\(run).db")
            let clientID = "bench-sync-\(run)"
            let (processStart, threadStart, start) = (CPUClock.process(), CPUClock.thread(), clock.now)
            // A fresh file: the store's migrations are part of what a first sync costs.
            let store = try ClientStore(configuration: ClientStoreConfiguration(path: path, clientID: clientID))
            let context = SyncContext(
                store: store, transport: transport, platform: "bench", appVersion: "1.0.0", pageLimit: Self.pageLimit)
            let cycle = SyncCycle(context: context, delay: { _ in })
            let summary = try cycle.run()
            result.wall.add(start.duration(to: clock.now))
            result.clientCPU.add(CPUClock.thread() - threadStart)
            result.processCPU.add(CPUClock.process() - processStart)
            guard try cycle.isCurrent() else { throw BenchmarkFailure("the initial sync did not end current") }
            guard summary.scopesVerified.contains("catalog") else {
                throw BenchmarkFailure("the initial sync did not verify the catalog scope")
            }
            guard result.rows == 0 || result.rows == summary.rowsApplied else {
                throw BenchmarkFailure("initial syncs applied \(result.rows) and \(summary.rowsApplied) rows")
            }
            result.rows = summary.rowsApplied
            store.close()
            if run + 1 < runs { SeedFiles.remove(path) }
            result.warmStore = path
            result.warmClientID = clientID
        }
        return result
    }

    /// Per-cycle and per-pull-request times of `count` cycles of a warm client, `prepare` running before each.
    struct Steady {
        var cycles = Distribution()
        var cycleCPU = Distribution()
        var pulls = Distribution()
    }

    private func steadyCycles(
        _ cycle: SyncCycle, _ transport: TimedTransport, count: Int, prepare: (Int) throws -> Void
    ) throws -> Steady {
        var steady = Steady()
        let clock = ContinuousClock()
        for round in 0...count {
            try prepare(round)
            _ = transport.takePullDurations()
            let (threadStart, start) = (CPUClock.thread(), clock.now)
            let summary = try cycle.run()
            let (wall, cpu) = (start.duration(to: clock.now), CPUClock.thread() - threadStart)
            guard summary.rebuildRequests == 0 else { throw BenchmarkFailure("a steady cycle rebuilt a scope") }
            let pulls = transport.takePullDurations()
            // Round 0 warms statement caches and the server's cursor state; it is not counted.
            guard round > 0 else { continue }
            steady.cycles.add(wall)
            steady.cycleCPU.add(cpu)
            pulls.forEach { steady.pulls.add($0) }
        }
        return steady
    }

    /// An operator write to one category: one changed row in the catalog scope for the next pull.
    private func touchCategory(_ server: BenchServer, round: Int) throws {
        let row = JSONValue.object(JSONObject([
            JSONMember("fld_category_id", .number(JSONNumber(1))),
            JSONMember("fld_category_name", .string("Steady round \(round)")),
        ]))
        try server.engine.operatorWrite(table: "tbl_categories", pk: .number(JSONNumber(1)), row: row)
    }
}

/// Durations with median and 95th percentile.
private struct Distribution {
    private(set) var durations: [Duration] = []

    mutating func add(_ duration: Duration) {
        durations.append(duration)
    }

    var median: Duration { Samples(durations: durations).median }
    var best: Duration { Samples(durations: durations).best }

    /// The nearest-rank 95th percentile.
    var p95: Duration {
        let sorted = durations.sorted()
        guard !sorted.isEmpty else { return .zero }
        let rank = Int((0.95 * Double(sorted.count)).rounded(.up))
        return sorted[min(sorted.count, max(1, rank)) - 1]
    }
}

private extension Duration {
    /// The duration as floating-point milliseconds.
    var milliseconds: Double { seconds * 1000 }
}

/// The libcurl transport as the engine sees it, as the benchmark user, timing every `/sync/pull` round trip.
private final class TimedTransport: SyncTransport {
    private let curl: CurlTransport
    private let pullDurations = Mutex<[Duration]>([])

    init(baseURL: String) throws {
        var configuration = CurlTransport.Configuration(baseURL: baseURL)
        configuration.totalTimeout = .seconds(600)
        curl = try CurlTransport(configuration: configuration)
    }

    func post(path: String, body: [UInt8]) throws -> SyncReply {
        let clock = ContinuousClock()
        let start = clock.now
        let response = try curl.send(
            .protocolPost(path: path, body: body, credential: BenchServer.credential, appVersion: "1.0.0"))
        if path == "/sync/pull" {
            let elapsed = start.duration(to: clock.now)
            pullDurations.withLock { $0.append(elapsed) }
        }
        return SyncReply(
            status: response.status, headers: response.headers.map { (name: $0.name, value: $0.value) },
            body: response.body)
    }

    /// The pull round trips since the last call.
    func takePullDurations() -> [Duration] {
        pullDurations.withLock { durations in
            defer { durations = [] }
            return durations
        }
    }
}
