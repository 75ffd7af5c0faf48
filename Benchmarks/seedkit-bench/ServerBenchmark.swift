import SynchroProtocol

/// The reference server end to end: started in-process on loopback with the demo dataset and a
/// temporary database, driven over real HTTP by ``CurlTransport``, every response parsed by the
/// client's ``StrictJSONParser``. Each figure is set against the same rows inserted through the raw
/// sqlite3 C API in the same run (``RawSQLiteBaseline``).
extension Benchmark {
    static let serverPush = Benchmark(
        name: "server.push",
        summary: "push of 500-insert batches into tbl_notes, immediate materialization, over loopback HTTP "
            + "(goal ≥ 2,000 mutations/s); baseline: raw SQLite insert of the stored rows"
    ) { options in
        try ServerPushBenchmark(options: options).figures()
    }

    static let serverRebuild = Benchmark(
        name: "server.rebuild",
        summary: "full rebuild of the 100,000-row catalog scope, limit 1000, first request (staging) to final "
            + "page, client parsing included (goal ≥ 100,000 rows/s); baseline: raw SQLite insert of the rows"
    ) { options in
        try ServerRebuildBenchmark(options: options).figures()
    }

    static let serverPull = Benchmark(
        name: "server.pull",
        summary: "paged pull (limit 1000) of 20,000 pushed changes from one cursor to the terminal page, "
            + "client parsing included; baseline: raw SQLite insert of the changed rows"
    ) { options in
        try ServerPullBenchmark(options: options).figures()
    }
}

/// The catalog size of the demo dataset under `--scale`.
private func catalogRows(_ options: BenchmarkOptions) -> Int {
    max(1, Int(100_000 * options.scale))
}

/// The client side of one response: strict parsing with the native clients' guards.
private func parseObject(_ bytes: [UInt8]) throws -> JSONObject {
    guard let object = try StrictJSONParser(limits: .protocolDefault).parse(bytes).objectValue else {
        throw BenchmarkFailure("a response is not an object")
    }
    return object
}

// MARK: - Push

private struct ServerPushBenchmark {
    static let batchSize = 500

    let options: BenchmarkOptions

    func figures() throws -> [BenchmarkFigure] {
        let server = try BenchServer(catalogRows: catalogRows(options))
        let client = try BenchClient.connect(server, clientID: "bench-push")
        let batches = max(1, Int((10 * options.scale).rounded()))
        let perRound = batches * Self.batchSize

        // Sealed bodies exist before the first transmission (§4.9): building them is not server work.
        let rounds = options.iterations + 1
        var bodies: [[[UInt8]]] = []
        for round in 0..<rounds {
            bodies.append((0..<batches).map { b in
                let batch = round * batches + b
                return client.notePushBody(batch: batch, first: batch * Self.batchSize, count: Self.batchSize)
            })
        }
        var round = 0
        var images: [StoredRowImage] = []
        let samples = try Stopwatch.samples(iterations: options.iterations) { () throws -> Int in
            defer { round += 1 }
            var accepted = 0
            for body in bodies[round] {
                let reply = try parseObject(try server.postOK("/sync/push", body))
                let outcomes = reply["accepted"]?.arrayValue ?? []
                accepted += outcomes.count
                if round == 0 {
                    for outcome in outcomes {
                        guard let object = outcome.objectValue else { continue }
                        images.append(try StoredRowImage(object, rowMember: "server_row", manifest: client.manifest))
                    }
                }
            }
            guard accepted == perRound else { throw BenchmarkFailure("push accepted \(accepted) of \(perRound)") }
            return accepted
        }
        let baseline = try RawSQLiteBaseline(path: server.scratchPath("baseline.db"))
            .rowsPerSecond(images, iterations: options.iterations)
        let rate = Double(perRound) / samples.median.seconds
        return [
            BenchmarkFigure(name: "server.push.mutations-per-round", value: Double(perRound), unit: "mutations"),
            BenchmarkFigure(
                name: "server.push.rate", value: rate, unit: "mutations/s",
                baseline: .init(value: baseline, unit: "rows/s raw SQLite insert")),
            BenchmarkFigure(
                name: "server.push.batch-latency", value: samples.median.seconds / Double(batches) * 1000,
                unit: "ms per 500-mutation batch"),
        ]
    }
}

// MARK: - Rebuild

private struct ServerRebuildBenchmark {
    static let limit = 1000

    let options: BenchmarkOptions

    /// One complete attempt: every page requested and parsed.
    struct Run {
        var records = 0
        var firstPage: Duration = .zero
        /// The continuation each page answered with, nil for the final page.
        var continuations: [String?] = []
    }

    func figures() throws -> [BenchmarkFigure] {
        let server = try BenchServer(catalogRows: catalogRows(options))
        let client = try BenchClient.connect(server, clientID: "bench-rebuild")
        var runs: [Run] = []
        var images: [StoredRowImage] = []
        var durations: [Duration] = []
        let clock = ContinuousClock()
        // Round 0 is the untimed warm-up. Before every round one catalog row changes, so each
        // attempt stages a new snapshot and computes its scope digest afresh, as the first rebuild
        // after any write does, instead of finding the digest of an unchanged scope cached.
        for attempt in 0...options.iterations {
            try touchCatalog(server, attempt: attempt)
            let start = clock.now
            let run = try rebuild(server, client, rebuildID: BenchClient.uuid(attempt)) { record in
                guard attempt == 0 else { return }
                images.append(try StoredRowImage(record, rowMember: "row", manifest: client.manifest))
            }
            if attempt > 0 { durations.append(start.duration(to: clock.now)) }
            runs.append(run)
        }
        let samples = Samples(durations: durations)
        let rows = runs[0].records
        guard runs.allSatisfy({ $0.records == rows }) else { throw BenchmarkFailure("rebuilds differ in size") }

        // Every page of the last attempt again: exact replays of the same snapshot (§6.3).
        let last = runs[runs.count - 1]
        let lastID = BenchClient.uuid(options.iterations)
        let replay = try Stopwatch.samples(iterations: options.iterations) { () throws -> Int in
            var records = 0
            var cursor: String?
            for next in last.continuations {
                let body = client.rebuildBody(scope: "catalog", rebuildID: lastID, cursor: cursor, limit: Self.limit)
                let page = try parseObject(try server.postOK("/sync/rebuild", body))
                records += page["records"]?.arrayValue?.count ?? 0
                cursor = next
            }
            guard records == rows else { throw BenchmarkFailure("a replay served \(records) of \(rows) rows") }
            return records
        }
        let baseline = try RawSQLiteBaseline(path: server.scratchPath("baseline.db"))
            .rowsPerSecond(images, iterations: options.iterations)
        let firstPage = Samples(durations: runs.dropFirst().map(\.firstPage)).median
        let rawUnit = "rows/s raw SQLite insert"
        return [
            BenchmarkFigure(name: "server.rebuild.rows", value: Double(rows), unit: "rows"),
            BenchmarkFigure(
                name: "server.rebuild.rate", value: Double(rows) / samples.median.seconds, unit: "rows/s",
                baseline: .init(value: baseline, unit: rawUnit)),
            BenchmarkFigure(
                name: "server.rebuild.first-request", value: firstPage.seconds * 1000,
                unit: "ms (staging + first page)"),
            BenchmarkFigure(
                name: "server.rebuild.replay-rate", value: Double(rows) / replay.median.seconds, unit: "rows/s",
                baseline: .init(value: baseline, unit: rawUnit)),
        ]
    }

    /// An operator write to one category: a new version of a catalog row, materialized at once.
    private func touchCatalog(_ server: BenchServer, attempt: Int) throws {
        let row = JSONValue.object(JSONObject([
            JSONMember("fld_category_id", .number(JSONNumber(1))),
            JSONMember("fld_category_name", .string("Benchmark round \(attempt)")),
        ]))
        try server.engine.operatorWrite(table: "tbl_categories", pk: .number(JSONNumber(1)), row: row)
    }

    /// Requests every page of a new attempt, parsing each, and hands each record to `record`.
    private func rebuild(
        _ server: BenchServer, _ client: BenchClient, rebuildID: String, record: (JSONObject) throws -> Void
    ) throws -> Run {
        var run = Run()
        var cursor: String?
        let clock = ContinuousClock()
        repeat {
            let start = clock.now
            let body = client.rebuildBody(scope: "catalog", rebuildID: rebuildID, cursor: cursor, limit: Self.limit)
            let page = try parseObject(try server.postOK("/sync/rebuild", body))
            if run.continuations.isEmpty { run.firstPage = start.duration(to: clock.now) }
            let records = page["records"]?.arrayValue ?? []
            run.records += records.count
            for item in records {
                guard let object = item.objectValue else { throw BenchmarkFailure("a record is not an object") }
                try record(object)
            }
            cursor = page["cursor"]?.stringValue
            run.continuations.append(cursor)
        } while cursor != nil
        return run
    }
}

// MARK: - Pull

private struct ServerPullBenchmark {
    static let limit = 1000
    static let batchSize = 500

    let options: BenchmarkOptions

    func figures() throws -> [BenchmarkFigure] {
        let server = try BenchServer(catalogRows: catalogRows(options))
        let client = try BenchClient.connect(server, clientID: "bench-pull")
        let scope = "user:\(BenchServer.user)"
        let start = try startCursor(server, client, scope: scope)
        let changes = max(Self.batchSize, Int(20_000 * options.scale) / Self.batchSize * Self.batchSize)
        for batch in 0..<(changes / Self.batchSize) {
            _ = try server.postOK(
                "/sync/push", client.notePushBody(batch: batch, first: batch * Self.batchSize, count: Self.batchSize))
        }

        var images: [StoredRowImage] = []
        var round = 0
        let samples = try Stopwatch.samples(iterations: options.iterations) { () throws -> Int in
            defer { round += 1 }
            var delivered = 0
            var cursor = start
            while true {
                let page = try parseObject(try server.postOK(
                    "/sync/pull", client.pullBody(scopes: [(scope, cursor)], limit: Self.limit)))
                let pageChanges = page["changes"]?.arrayValue ?? []
                delivered += pageChanges.count
                if round == 0 {
                    for change in pageChanges {
                        guard let object = change.objectValue else { continue }
                        images.append(try StoredRowImage(object, rowMember: "row", manifest: client.manifest))
                    }
                }
                if page["has_more"]?.boolValue == false { break }
                guard let next = page["scope_cursors"]?.objectValue?[scope]?.stringValue else {
                    throw BenchmarkFailure("an intermediate pull page issued no cursor")
                }
                cursor = next
            }
            guard delivered == changes else { throw BenchmarkFailure("pull delivered \(delivered) of \(changes)") }
            return delivered
        }
        let baseline = try RawSQLiteBaseline(path: server.scratchPath("baseline.db"))
            .rowsPerSecond(images, iterations: options.iterations)
        return [
            BenchmarkFigure(name: "server.pull.changes", value: Double(changes), unit: "changes"),
            BenchmarkFigure(
                name: "server.pull.rate", value: Double(changes) / samples.median.seconds, unit: "rows/s",
                baseline: .init(value: baseline, unit: "rows/s raw SQLite insert")),
        ]
    }

    /// The scope's incremental cursor after a rebuild, before any benchmark write.
    private func startCursor(_ server: BenchServer, _ client: BenchClient, scope: String) throws -> String {
        var cursor: String?
        let rebuildID = BenchClient.uuid(0x7000_0000)
        while true {
            let body = client.rebuildBody(scope: scope, rebuildID: rebuildID, cursor: cursor, limit: Self.limit)
            let page = try parseObject(try server.postOK("/sync/rebuild", body))
            if let final = page["final_scope_cursor"]?.stringValue { return final }
            guard let next = page["cursor"]?.stringValue else { throw BenchmarkFailure("rebuild page lacks a cursor") }
            cursor = next
        }
    }
}
