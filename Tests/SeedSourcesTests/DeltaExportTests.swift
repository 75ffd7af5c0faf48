import Foundation
import SQLiteKit
import SeedSources
import Synchronization
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// Delta exports against a real delta-sync API on loopback (``DeltaFixtureServer``): both paging shapes, deletes,
/// writes landing mid-export, reset, Retry-After, and every typed failure with nothing published.
@Suite struct DeltaExportTests {
    let server: DeltaFixtureServer
    let directory: TemporaryDirectory
    let delays = DelayLog()

    init() throws {
        server = try DeltaFixtureServer()
        directory = try TemporaryDirectory(prefix: "seedkit-delta")
        for index in 1...7 { server.upsertArticle("a\(index)", title: "Article \(index)", words: Int64(index * 100)) }
        server.upsertArticle("a2", title: "Article 2, edited")
        server.deleteArticle("a5")
        for index in 1...5 { server.upsertUser("u\(index)", name: "User \(index)") }
        server.deleteUser("u3")
    }

    func definition(_ template: String = "updatedAfter={since}&limit={limit}") throws -> DeltaSourceDefinition {
        let text = DeltaDefinitionFixture.text(baseURL: server.baseURL, template: template)
        return try DeltaSourceDefinition(bytes: Array(text.utf8))
    }

    func export(_ definition: DeltaSourceDefinition, token: String = DeltaFixtureServer.token) throws(DeltaSourceError)
        -> DeltaExportReport
    {
        let delays = self.delays
        return try DeltaExporter.export(
            definition: definition, bearerToken: token, to: directory.path("seed.db"),
            options: DeltaExportOptions(maximumRetries: 2, sleep: { delay in delays.record(delay) }))
    }

    func rows(_ sql: String) throws -> [[SQLiteValue]] {
        let connection = try Connection(path: directory.path("seed.db"), mode: .readOnly)
        defer { connection.close() }
        return try connection.rows(sql)
    }

    @Test func exportsBothShapesWithDeletesWhileWritesLand() throws {
        let wrote = Mutex(false)
        server.beforeEachPage { server, entity in
            guard entity == "articles", !wrote.withLock({ $0 }) else { return }
            wrote.withLock { $0 = true }
            server.upsertArticle("a8", title: "Written during the export")
            server.deleteArticle("a1")
        }
        let report = try export(try definition())
        #expect(DeltaExporter.verify(path: report.path).isEmpty)
        let ids = try rows("SELECT id, title FROM articles ORDER BY id").map { $0[0].textValue ?? "" }
        #expect(ids == ["a2", "a3", "a4", "a6", "a7", "a8"])
        #expect(try rows("SELECT title, words, tags FROM articles WHERE id = 'a2'").first?.map(\.textValue)
            == ["Article 2, edited", nil, "[\"t1\"]"])
        #expect(try rows("SELECT id FROM app_users ORDER BY id").map { $0[0].textValue ?? "" }
            == ["u1", "u2", "u4", "u5"])
        let checkpoints = try rows("SELECT entity, cursor, row_count, digest FROM _delta_checkpoints ORDER BY entity")
        #expect(checkpoints.map { $0[0].textValue } == ["articles", "users"])
        #expect(checkpoints[0][1].textValue == "11")
        #expect(checkpoints[1][1].textValue == DeltaFixtureServer.timestamp(6))
        #expect(checkpoints.map { $0[2].integerValue } == [6, 4])
        #expect(report.entities.map(\.digest) == checkpoints.map { $0[3].textValue ?? "" })
        let users = try #require(report.entities.last)
        #expect(users.pages == 3 && users.sessionsNeeded == 2)
        let evidence = try #require(FileManager.default.contents(atPath: report.evidencePath))
        let object = try StrictJSONParser().parse(Array(evidence)).objectValue
        #expect(object?["artifact"]?.objectValue?["sha256"]?.stringValue == report.sha256)
        // The credential and the tenant header on every request; tokens percent-encoded; nothing stored.
        #expect(server.requestHeaders.allSatisfy {
            $0.single("Authorization") == "Bearer \(DeltaFixtureServer.token)" && $0.single("X-Tenant") == "acme"
        })
        #expect(server.queries.contains("updatedAfter=2026-01-01T00%3A00%3A02.000Z&limit=2"))
        let seedText = String(decoding: try #require(FileManager.default.contents(atPath: report.path)), as: UTF8.self)
        #expect(!seedText.contains(DeltaFixtureServer.token) && !seedText.contains("X-Tenant"))
    }

    @Test func odataTemplateIsPercentEncodedAndExports() throws {
        _ = try export(try definition("$filter={cursorField} gt {since}&$top={limit}"))
        #expect(try rows("SELECT count(*) FROM app_users").first?.first?.integerValue == 4)
        #expect(server.queries.contains("$filter=updatedAt%20gt%201970-01-01T00%3A00%3A00.000Z&$top=2"))
    }

    @Test func resetMidExportRestartsTheEntityFromZero() throws {
        let injected = Mutex(false)
        server.beforeEachPage { server, entity in
            guard entity == "articles", !injected.withLock({ $0 }) else { return }
            injected.withLock { $0 = true }
            server.vacuum()
        }
        let report = try export(try definition())
        #expect(report.entities[0].resets == 1)
        #expect(try rows("SELECT count(*) FROM articles").first?.first?.integerValue == 6)
        #expect(DeltaExporter.verify(path: report.path).isEmpty)
    }

    @Test func resetsAreBounded() throws {
        for _ in 0..<4 { server.inject(.reset, for: "articles") }
        try expectFailure("reset_limit_exceeded")
    }

    @Test func retryAfterIsHonouredOn429And503() throws {
        server.inject(.status(429, retryAfter: "2"), for: "articles")
        server.inject(.status(503, retryAfter: nil), for: "users")
        _ = try export(try definition())
        #expect(delays.all == [.seconds(2), .seconds(1)])
    }

    @Test func retriesRunOut() throws {
        for _ in 0..<3 { server.inject(.status(503, retryAfter: "1"), for: "articles") }
        let error = try expectFailure("retries_exhausted")
        #expect(error.description.contains("\(server.baseURL)/v1/sync/articles"))
    }

    @Test func refusedCredentialNamesURLAndStatusNotTheToken() throws {
        do {
            _ = try export(try definition(), token: "wrong-token")
            Issue.record("the export succeeded")
        } catch let error as DeltaSourceError {
            #expect(error.rule == "http_status")
            #expect(error.description == "\(server.baseURL)/v1/sync/articles: status (HTTP 401)")
        }
        #expect(!FileManager.default.fileExists(atPath: directory.path("seed.db")))
    }

    @Test(arguments: [
        (DeltaFixtureServer.Fault.repeatedRev, "articles", "rev_repeated"),
        (.descendingRev, "articles", "rev_not_increasing"),
        (.hasMoreOnEmptyPage, "articles", "has_more_on_empty_page"),
        (.overLimit, "articles", "page_over_limit"),
        (.stuckCursor, "articles", "cursor_not_advancing"),
        (.rowWithoutKey, "articles", "row_without_key"),
        (.overLimit, "users", "page_over_limit"),
        (.stuckCursor, "users", "cursor_not_advancing"),
        (.rowWithoutKey, "users", "row_without_key"),
    ])
    func malformedPagesAreTypedAndPublishNothing(fault: DeltaFixtureServer.Fault, entity: String, rule: String) throws {
        server.inject(fault, for: entity)
        let error = try expectFailure(rule)
        #expect(error.description.hasPrefix("entity \(entity), page 1: "))
    }

    @Test func malformedJSONNamesTheURL() throws {
        server.inject(.malformed, for: "users")
        let error = try expectFailure("malformed_json")
        #expect(error.description.hasPrefix("\(server.baseURL)/users: malformed_json"))
    }

    /// The failure carries the network kind as its rule, as every command's does (docs/cli.md, "Network failures").
    @Test func unreachableSourceIsATransportFailure() throws {
        let text = DeltaDefinitionFixture.text(baseURL: "http://127.0.0.1:9")
        do {
            _ = try DeltaExporter.export(
                definition: try DeltaSourceDefinition(bytes: Array(text.utf8)), bearerToken: "x",
                to: directory.path("seed.db"))
            Issue.record("the export succeeded")
        } catch {
            #expect(error.rule == "connection_refused")
            #expect(error.description.hasPrefix("http://127.0.0.1:9/"))
        }
    }

    @Test func existingOutputIsRefused() throws {
        _ = try directory.write("seed.db", [1, 2, 3])
        do {
            _ = try export(try definition())
            Issue.record("the export succeeded")
        } catch let error as DeltaSourceError {
            #expect(error.rule == "output_exists")
        }
        #expect(FileManager.default.contents(atPath: directory.path("seed.db")) == Data([1, 2, 3]))
    }

    @Test func verifyFindsAnEditedRow() throws {
        let report = try export(try definition())
        let connection = try Connection(path: report.path)
        try connection.execute("UPDATE articles SET title = 'edited' WHERE id = 'a3'")
        connection.close()
        #expect(DeltaExporter.verify(path: report.path) == ["digest:articles"])
    }

    @discardableResult
    func expectFailure(_ rule: String) throws -> DeltaSourceError {
        do {
            _ = try export(try definition())
        } catch let error as DeltaSourceError {
            #expect(error.rule == rule, "\(error)")
            #expect(!error.description.contains(DeltaFixtureServer.token))
            let left = try FileManager.default.contentsOfDirectory(atPath: directory.url.path)
            #expect(left.isEmpty, "left behind: \(left)")
            return error
        }
        Issue.record("the export succeeded")
        return .verification(checks: [])
    }
}

/// Definition files: each violation names its member and rule.
@Suite struct DeltaSourceDefinitionTests {
    static let valid = DeltaDefinitionFixture.text(baseURL: "https://api.example.com")

    @Test(arguments: [
        ("\"base_url\": \"https://api.example.com\"", "\"base_url\": \"ftp://x\"", "base_url",
         "not_an_http_url_without_credentials_query_or_fragment"),
        ("\"format\": \"seedkit-delta-source/1\"", "\"format\": \"v2\"", "format", "unsupported_format"),
        ("\"type\": \"int64\"", "\"type\": \"integer\"", "entities[0].columns[2].type", "unknown_portable_type"),
        ("\"primary_key\": \"id\"", "\"primary_key\": \"uuid\"", "entities[0].primary_key", "not_a_declared_column"),
        ("\"limit\": 3", "\"limit\": 2001", "entities[0].paging.limit", "not_an_integer_in_1_2000"),
        ("updatedAfter={since}", "updatedAfter={since}&x={page}", "entities[1].paging.list_query_template",
         "unknown_token"),
        ("&limit={limit}", "&limit={limit", "entities[1].paging.list_query_template", "unclosed_token"),
        ("\"shape\": \"list\"", "\"shape\": \"graphql\"", "entities[1].paging.shape", "not_changes_or_list"),
        ("\"table\": \"app_users\"", "\"table\": \"articles\"", "entities[1].table", "duplicate_table"),
        ("\"table\": \"app_users\"", "\"table\": \"_delta_x\"", "entities[1].table",
         "not_a_plain_identifier_or_reserved"),
        ("\"bearer_env\": \"DELTA_TOKEN\"", "\"bearer_env\": \"DELTA TOKEN\"", "auth.bearer_env",
         "not_an_environment_variable_name"),
        ("\"X-Tenant\"", "\"Authorization\"", "headers.Authorization", "not_an_allowed_header_name"),
        ("\"acme\"", "7", "headers.X-Tenant", "not_a_string_or_env_reference"),
        ("\"cursor_field\"", "\"cursor_feld\"", "entities[1].paging.cursor_feld", "unknown_member"),
    ])
    func violationsNameTheirMember(original: String, replacement: String, member: String, rule: String) {
        #expect(Self.valid.contains(original))
        let text = Self.valid.replacingOccurrences(of: original, with: replacement)
        do {
            _ = try DeltaSourceDefinition(bytes: Array(text.utf8))
            Issue.record("accepted")
        } catch {
            guard case .definition(let actualMember, let actualRule) = error else {
                Issue.record("\(error)")
                return
            }
            #expect(actualMember == member)
            #expect(actualRule == rule)
        }
    }

    @Test func aHeaderValueComesFromTheEnvironment() throws {
        let text = Self.valid.replacingOccurrences(
            of: "\"X-Tenant\": \"acme\"", with: "\"X-Api-Key\": {\"env\": \"API_KEY\"}")
        let definition = try DeltaSourceDefinition(bytes: Array(text.utf8), environment: ["API_KEY": "k-123"])
        #expect(definition.headers.map { "\($0.0)=\($0.1)" } == ["X-Api-Key=k-123"])
        do {
            _ = try DeltaSourceDefinition(bytes: Array(text.utf8), environment: [:])
            Issue.record("accepted")
        } catch {
            #expect(error.description == "delta source definition: headers.X-Api-Key.env: environment_variable_not_set")
        }
    }

    @Test func theValidFixtureParses() throws {
        let definition = try DeltaSourceDefinition(bytes: Array(Self.valid.utf8))
        #expect(definition.entities.map(\.table) == ["articles", "app_users"])
        #expect(definition.bearerEnvironmentVariable == "DELTA_TOKEN")
    }

    @Test func tokenValuesArePercentEncoded() throws {
        let template = try DeltaListQueryTemplate("$filter={cursorField} gt {since}&$top={limit}", member: "t")
        #expect(template.render(since: "2026-01-01T00:00:00+02:00", limit: 50, cursorField: "updated at")
            == "$filter=updated%20at%20gt%202026-01-01T00%3A00%3A00%2B02%3A00&$top=50")
    }
}

/// The waits an export asked for, recorded instead of slept.
final class DelayLog: Sendable {
    private let delays = Mutex<[Duration]>([])

    func record(_ delay: Duration) { delays.withLock { $0.append(delay) } }
    var all: [Duration] { delays.withLock { $0 } }
}
