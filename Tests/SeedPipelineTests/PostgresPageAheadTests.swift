import Foundation
import SynchroProtocol
import Testing
import _SeedkitTestSupport
@testable import SeedArtifacts
import SeedSources

/// `PostgresExportSource` sends the call for the next page as soon as a page arrives; the call sent ahead may only
/// ever answer exactly its own request.
@Suite("the PostgreSQL source's page sent ahead", .serialized)
struct PostgresPageAheadTests {
    let cluster: PostgresCluster
    let server: RunningServer
    let database: String
    let exporter: String
    let password: String
    static let pageLimit: Int64 = 40

    init() throws {
        cluster = try PostgresCluster.shared()
        server = try RunningServer(rows: 230, store: .postgres)
        database = try #require(server.postgresDatabase)
        let suffix = UUID().uuidString.lowercased().prefix(8)
        exporter = "page_ahead_exporter_\(suffix)"
        password = "page-ahead-\(suffix)"
        try cluster.createLogin(exporter, password: password, memberOf: "synchro_seed")
    }

    func source() throws -> PostgresExportSource {
        try PostgresExportSource(connectionString:
            "host=127.0.0.1 port=\(cluster.port) dbname=\(database) user=\(exporter) password=\(password)")
    }

    func object(_ bytes: [UInt8]) throws -> JSONObject {
        guard case .object(let object) = try StrictJSONParser().parse(bytes) else {
            throw SeedExportError.page(scope: "", ordinal: 0, rule: "not_an_object")
        }
        return object
    }

    @Test("a repeated, a wrong and the expected request after a page each get their own answer, in one transaction")
    func onlyTheExactRequestUsesThePageSentAhead() throws {
        let source = try source()
        _ = try source.schemaManifest()
        let manifest = try object(try source.exportManifest(pageLimit: Self.pageLimit))
        let scope = try #require(manifest["portable_scopes"]?.arrayValue?.first?.objectValue)
        let first = SeedPageRequest(
            scopeID: try #require(scope["id"]?.stringValue), pageToken: try #require(scope["page_token"]?.stringValue),
            receipt: try #require(scope["continuation"]?.stringValue), expectedRowOrdinal: 0, limit: Self.pageLimit)
        let page0 = try source.scopePage(first)
        let next = try #require(try object(page0)["page_token"]?.stringValue)
        #expect(try object(page0)["has_more"] == .bool(true))
        // The same request again (the call sent ahead, for ordinal 40, is discarded): the same page.
        let again = try source.scopePage(first)
        #expect(RecordingSource.records(again) == RecordingSource.records(page0))
        // A request the page did not lead to is refused by the functions, and the transaction goes on.
        let wrong = SeedPageRequest(
            scopeID: first.scopeID, pageToken: first.pageToken, receipt: first.receipt,
            expectedRowOrdinal: Self.pageLimit, limit: Self.pageLimit)
        #expect(throws: SeedExportError.self) { _ = try source.scopePage(wrong) }
        let expected = SeedPageRequest(
            scopeID: first.scopeID, pageToken: next, receipt: first.receipt, expectedRowOrdinal: Self.pageLimit,
            limit: Self.pageLimit)
        let page1 = try source.scopePage(expected)
        #expect(try object(page1)["scope"]?.stringValue == first.scopeID)
        #expect(!RecordingSource.records(page1).isEmpty && RecordingSource.records(page1) != RecordingSource.records(page0))
        // Asked again right after it was answered ahead: the same page as when it was the call sent ahead.
        let page1Again = try source.scopePage(expected)
        #expect(RecordingSource.records(page1Again) == RecordingSource.records(page1))
        // A call still outstanding when the export commits is received first.
        try source.finish()
    }
}
