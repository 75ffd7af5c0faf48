import SQLiteKit
import SynchroClient
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// How pending intent becomes batches (client contract §6.2, §6.4; seed 001 rules): the split at the request limit,
/// atomic groups that wait or exceed the batch size, block propagation inside a group, and a refused atomic batch.
@Suite("Batch formation")
struct BatchFormationTests {
    static func insertSQL(_ id: String) -> String {
        "INSERT INTO tasks (id, owner_id, title, done, position) VALUES ('\(id)', 'alice', 'G', 0, 1)"
    }

    @Test(
        "ungrouped intent fills a batch up to the request limit; the first mutation that does not fit starts the next"
    )
    func requestLimitSplitPoint() throws {
        let server = try RunningServer()
        let client = try ConnectedClient(server: server, clientID: "split-point")
        // Twenty titles of 60,000 octets: each fits alone, about seventeen fit in one 1,048,576-octet request.
        for index in 0..<20 {
            try client.insertTask(String(format: "t-wide-%02d", index), title: String(repeating: "w", count: 60_000))
        }
        let outcomes = try pushAll(client)
        let bodies = client.transport.bodies
        #expect(outcomes.count == 2 && bodies.count == 2)
        let first = try #require(try StrictJSONParser().parse(bodies[0]).objectValue)
        let firstIDs = (first["mutations"]?.arrayValue ?? []).compactMap { $0.objectValue?["pk"]?.objectValue }
        #expect(bodies[0].count <= PushLimits.maxRequestBodyOctets)
        // The split point: one more mutation would not have fit.
        #expect(bodies[0].count + 60_000 > PushLimits.maxRequestBodyOctets)
        let second = try #require(try StrictJSONParser().parse(bodies[1]).objectValue)
        let secondIDs = (second["mutations"]?.arrayValue ?? []).compactMap { $0.objectValue?["pk"]?.objectValue }
        #expect(firstIDs.count + secondIDs.count == 20)
        #expect(secondIDs.first?["fld_task_id"] == .string(String(format: "t-wide-%02d", firstIDs.count)))
        #expect(try client.states() == Array(repeating: "accepted", count: 20))
    }

    @Test("an atomic group larger than the batch size is sealed whole, alone, with atomic true")
    func groupLargerThanBatchSize() throws {
        let server = try RunningServer()
        let client = try ConnectedClient(server: server, clientID: "group-large")
        try client.store.atomicWriteTransaction { transaction in
            for index in 0..<5 { try transaction.execute(Self.insertSQL("t-g\(index)")) }
        }
        let outcome = try client.exchange.pushNext(batchSize: 2)
        #expect(outcome == .reconciled(.init(applied: 5, conflicts: 0, rejectedTerminal: 0)))
        let sent = try #require(client.transport.bodies.first)
        let body = try StrictJSONParser().parse(sent).objectValue
        #expect(body?["atomic"] == .bool(true))
        #expect(body?["mutations"]?.arrayValue?.count == 5)
    }

    @Test("a group whose member waits on unsent intent waits whole, then goes out with the member's new base")
    func groupWaitsOnPredecessor() throws {
        let server = try RunningServer()
        let client = try ConnectedClient(server: server, clientID: "group-waits")
        try client.insertTask("t-base")
        try client.store.atomicWriteTransaction { transaction in
            try transaction.execute("UPDATE tasks SET title = 'grouped' WHERE id = 't-base'")
            try transaction.execute(Self.insertSQL("t-new"))
        }
        // The first batch carries only the ungrouped insert: the group waits for it.
        let sealed = try #require(try BatchSealer(store: client.store).nextBatch())
        let firstBody = try #require(try StrictJSONParser().parse(sealed.body).objectValue)
        #expect(firstBody["atomic"] == nil || firstBody["atomic"] == .bool(false))
        #expect(firstBody["mutations"]?.arrayValue?.count == 1)
        #expect(try BatchSealer(store: client.store).nextBatch()?.batchID == sealed.batchID, "the group still waits")
        _ = try client.exchange.send(sealed)
        let version = try #require(try client.taskVersion("t-base"))

        let outcome = try client.exchange.pushNext()
        #expect(outcome == .reconciled(.init(applied: 2, conflicts: 0, rejectedTerminal: 0)))
        let last = try #require(client.transport.bodies.last)
        let group = try StrictJSONParser().parse(last).objectValue
        #expect(group?["atomic"] == .bool(true))
        let update = group?["mutations"]?.arrayValue?.first { $0.objectValue?["op"] == .string("update") }
        #expect(update?.objectValue?["base_version"] == .string(version))
    }

    @Test("when a grouped member becomes blocked by its predecessor, every unsent member of its group is blocked")
    func blockingOneMemberBlocksTheGroup() throws {
        let server = try RunningServer()
        let first = try ConnectedClient(server: server, clientID: "group-block-a")
        let second = try ConnectedClient(server: server, clientID: "group-block-b")
        try first.insertTask("t-taken", title: "Server copy")
        try pushAll(first)
        // The second device inserts the same ID (the server will refuse it), then edits it inside a group.
        try second.insertTask("t-taken", title: "Mine")
        try second.store.atomicWriteTransaction { transaction in
            try transaction.execute("UPDATE tasks SET title = 'grouped' WHERE id = 't-taken'")
            try transaction.execute(Self.insertSQL("t-sibling"))
        }
        let outcome = try second.exchange.pushNext()
        #expect(outcome == .reconciled(.init(applied: 0, conflicts: 1, rejectedTerminal: 0)))
        let states = try second.states()
        #expect(states == ["rejected", "blocked_by_predecessor", "blocked_by_predecessor"], "\(states)")
        #expect(try second.exchange.pushNext() == nil, "nothing of the group is sendable")
    }

    @Test("a server that refuses an atomic batch with 400 invalid_request: the sealed batch is kept, nothing lost")
    func refusedAtomicBatchIsKept() throws {
        let server = try RunningServer()
        let client = try ConnectedClient(server: server, clientID: "group-refused")
        try client.store.atomicWriteTransaction { transaction in
            for index in 0..<2 { try transaction.execute(Self.insertSQL("t-r\(index)")) }
        }
        client.transport.refuseNext(status: 400, code: "invalid_request")
        #expect(throws: PushError.self) { try client.exchange.pushNext() }
        #expect(try client.batchStates() == ["pending"])
        #expect(try client.states() == ["sealed", "sealed"])
        let sent = try #require(client.transport.bodies.first)
        #expect(try StrictJSONParser().parse(sent).objectValue?["atomic"] == .bool(true))
    }
}
