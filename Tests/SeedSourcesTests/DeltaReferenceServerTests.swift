import Foundation
import SeedSources
import SQLiteKit
import Synchronization
import SynchroHTTP
import SynchroProtocol
import SynchroServer
import Testing
import _SeedkitTestSupport

/// Delta exports against the reference delta server (issue #22 item 4): its SQLite store, seed 003 pull and push,
/// seed 004 list pages (plain and OData), the vacuum horizon, and each fault ending in its typed error or its
/// documented recovery — real HTTP on loopback, real SQLite files.
@Suite struct DeltaReferenceServerTests {
    static let token = "reference-delta-token"
    let server: DeltaReferenceServer
    let directory: TemporaryDirectory
    let delays = DelayLog()

    init() throws {
        directory = try TemporaryDirectory(prefix: "seedkit-delta-ref")
        server = try DeltaReferenceServer(
            storePath: directory.path("store.db"), entities: ["articles", "users"], token: Self.token)
        try server.start()
        try server.store.write(entity: "articles", (1...40).map { index in
            ("a\(index)", Self.article("a\(index)", title: "Article \(index)", words: Int64(index)))
        })
        try server.store.write(entity: "articles", [("a7", nil), ("a9", nil)])
        try server.store.write(entity: "users", (1...9).map { index in
            ("u\(index)", JSONObject([JSONMember("id", .string("u\(index)")), JSONMember("name", .string("User \(index)"))]))
        })
    }

    static func article(_ id: String, title: String, words: Int64) -> JSONObject {
        JSONObject([JSONMember("id", .string(id)), JSONMember("title", .string(title)),
                    JSONMember("words", .number(JSONNumber(words)))])
    }

    func definition(template: String = "updatedAfter={since}&limit={limit}") throws -> DeltaSourceDefinition {
        try DeltaSourceDefinition(bytes: Array("""
            {"format": "seedkit-delta-source/1", "base_url": "\(server.baseURL)", "auth": {"bearer_env": "T"},
             "entities": [
              {"name": "articles", "table": "articles", "primary_key": "id",
               "columns": [{"name": "id", "type": "string"}, {"name": "title", "type": "string"},
                           {"name": "words", "type": "int64"}],
               "paging": {"shape": "changes", "path": "/v1/sync/articles", "limit": 7}},
              {"name": "users", "table": "users", "primary_key": "id",
               "columns": [{"name": "id", "type": "string"}, {"name": "name", "type": "string"},
                           {"name": "updatedAt", "type": "datetime"}],
               "paging": {"shape": "list", "base_path": "/v1/list/users", "list_query_template": "\(template)",
                          "cursor_field": "updatedAt", "page_size": 4, "max_pages_per_session": 2}}]}
            """.utf8))
    }

    func export(_ name: String = "seed.db") throws(DeltaSourceError) -> DeltaExportReport {
        let delays = self.delays
        let definition: DeltaSourceDefinition
        do { definition = try self.definition() } catch { throw .definition(member: "test", rule: "\(error)") }
        return try DeltaExporter.export(
            definition: definition, bearerToken: Self.token, to: directory.path(name),
            options: DeltaExportOptions(maximumRetries: 2, sleep: { delay in delays.record(delay) }))
    }

    func expectFailure(_ rule: String) {
        do {
            _ = try export()
            Issue.record("the export succeeded; expected \(rule)")
        } catch {
            #expect(error.rule == rule, "\(error)")
        }
        #expect(!FileManager.default.fileExists(atPath: directory.path("seed.db")))
        #expect(!FileManager.default.fileExists(atPath: directory.path("seed.db.evidence.json")))
    }

    /// Writes land (through the store, as pushes would) while the export pages through: the seed verifies, and
    /// its rehearsal (warm from the checkpoints, then a full pull from zero) matches.
    @Test func writesLandingDuringTheExportStillGiveAVerifiedSeedWhoseRehearsalMatches() throws {
        let pulls = Atomic<Int>(0)
        let store = server.store
        server.beforeEachPull { entity in
            guard entity == "articles", pulls.add(1, ordering: .relaxed).newValue == 3 else { return }
            _ = try? store.write(entity: "articles", [
                ("a41", Self.article("a41", title: "Written during the export", words: 41)), ("a2", nil),
                ("a3", Self.article("a3", title: "Edited during the export", words: 3)),
            ])
            _ = try? store.write(entity: "users", [("u2", nil)])
        }
        let report = try export()
        #expect(DeltaExporter.verify(path: report.path).isEmpty)
        #expect(report.entities.map(\.rows) == [38, 8])
        #expect(report.entities.last?.sessionsNeeded == 2)
        server.beforeEachPull { _ in }
        let rehearsal = try DeltaRehearsal.run(
            seed: report.path, definition: try definition(), bearerToken: Self.token,
            temporaryDirectory: directory.url.path)
        #expect(rehearsal.passed, "\(rehearsal.differences)")
    }

    @Test func anODataDefinitionExports() throws {
        let report = try DeltaExporter.export(
            definition: try definition(template: "$filter={cursorField} gt {since}&$top={limit}"),
            bearerToken: Self.token, to: directory.path("seed.db"))
        #expect(report.entities.last?.rows == 9)
        #expect(DeltaExporter.verify(path: report.path).isEmpty)
    }

    @Test func retryAfterOn429And503IsHonoured() throws {
        server.inject(.status(429, retryAfter: "2"), for: "articles")
        server.inject(.status(503, retryAfter: nil), for: "users")
        let report = try export()
        #expect(DeltaExporter.verify(path: report.path).isEmpty)
        #expect(delays.all == [.seconds(2), .seconds(1)])
    }

    @Test func unendingOverloadRunsOutOfRetries() {
        for _ in 0..<3 { server.inject(.status(503, retryAfter: "1"), for: "articles") }
        expectFailure("retries_exhausted")
    }

    @Test func aResetMidExportRestartsTheEntityAndTheSeedVerifies() throws {
        let pulls = Atomic<Int>(0)
        let server = self.server
        server.beforeEachPull { entity in
            if entity == "articles", pulls.add(1, ordering: .relaxed).newValue == 2 { server.inject(.reset, for: entity) }
        }
        let report = try export()
        #expect(report.entities.first?.resets == 1)
        #expect(report.entities.first?.rows == 38)
        #expect(DeltaExporter.verify(path: report.path).isEmpty)
    }

    @Test func repeatedAndNonMonotonicRevisionsAreTyped() {
        server.inject(.repeatedRev, for: "articles")
        expectFailure("rev_repeated")
        server.inject(.descendingRev, for: "articles")
        expectFailure("rev_not_increasing")
    }

    @Test func aLostResponseEndsTheExportAndARerunPublishes() throws {
        server.inject(.lostResponse, for: "users")
        expectFailure("network_failure")
        #expect(DeltaExporter.verify(path: try export().path).isEmpty)
    }

    /// An installed seed whose checkpoint is behind the vacuum horizon is told to reset; the warm wipes the entity
    /// type, pulls it from zero and ends where a full pull does.
    @Test func aWarmBehindTheVacuumHorizonResetsAndMatchesAFullPull() throws {
        let report = try export()
        try server.store.write(entity: "articles", [("a1", nil), ("a42", Self.article("a42", title: "New", words: 42))])
        try server.store.vacuum(entity: "articles")
        let app = directory.path("app.db")
        _ = try DeltaSeedInstaller.install(seed: report.path, to: app)
        let warm = try DeltaWarm.warm(definition: try definition(), bearerToken: Self.token, database: app)
        #expect(warm.entities.first?.resets == 1)
        #expect(warm.entities.first?.rows == 38)
        let rehearsal = try DeltaRehearsal.run(
            seed: report.path, definition: try definition(), bearerToken: Self.token,
            temporaryDirectory: directory.url.path)
        #expect(rehearsal.passed, "\(rehearsal.differences)")
    }

    /// Seed 003 §3: per-mutation results with the assigned revision, a conflict when the row moved past
    /// `base_rev`, and a retried `client_id` answered as the first time.
    @Test func pushAssignsRevisionsReportsConflictsAndIsIdempotent() throws {
        let transport = try CurlTransport(configuration: .init(baseURL: server.baseURL))
        func push(_ body: String) throws -> [JSONObject] {
            var headers = HTTPHeaders()
            headers.append(name: "Authorization", value: "Bearer \(Self.token)")
            headers.append(name: "Content-Type", value: "application/json")
            let response = try transport.send(TransportRequest(
                method: .post, path: "/v1/sync/articles", headers: headers, body: Array(body.utf8)))
            #expect(response.status == 200)
            return try StrictJSONParser().parse(response.body).objectValue?["results"]?.arrayValue?
                .compactMap(\.objectValue) ?? []
        }
        let current = try #require(try server.store.row(entity: "articles", id: "a5"))
        let body = """
            {"mutations": [
              {"op": "upsert", "client_id": "c1", "base_rev": 0, "entity": {"id": "n1", "title": "New", "words": 1}},
              {"op": "upsert", "client_id": "c2", "base_rev": \(current.rev - 1),
               "entity": {"id": "a5", "title": "Stale", "words": 5}},
              {"op": "delete", "client_id": "c3", "base_rev": \(current.rev), "id": "a5"}]}
            """
        let results = try push(body)
        #expect(results.map { $0["status"]?.stringValue } == ["ok", "conflict", "ok"])
        #expect(results[1]["current_rev"]?.numberValue?.exactInt64 == current.rev)
        let assigned = try #require(results[0]["rev"]?.numberValue?.exactInt64)
        #expect(results[2]["rev"]?.numberValue?.exactInt64 == assigned + 1)
        #expect(try push(body).map { CanonicalJSONText($0) } == results.map { CanonicalJSONText($0) })
        #expect(try server.store.row(entity: "articles", id: "a5")?.deleted == true)

        var unauthenticated = HTTPHeaders()
        unauthenticated.append(name: "Accept", value: "application/json")
        let refused = try transport.send(TransportRequest(method: .get, path: "/v1/sync/articles?since=0", headers: unauthenticated))
        #expect(refused.status == 401)
    }
}

private func CanonicalJSONText(_ object: JSONObject) -> String {
    (try? CanonicalJSON.string(.object(object))) ?? ""
}
