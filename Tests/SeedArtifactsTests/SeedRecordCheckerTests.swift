import Foundation
import SQLiteKit
import SynchroProtocol
import Testing
import _SeedkitTestSupport
@testable import SeedArtifacts
import SeedSources
@testable import SynchroStore

/// The record check finds a record's five members in one pass and each row field first where the previous column's
/// ended (``SeedRecordChecker``): whatever the order of members, the outcome is the keyed lookups' one.
@Suite struct SeedRecordCheckerTests {
    let checker: SeedRecordChecker
    let records: [JSONObject]

    init() throws {
        let server = try RunningServer(rows: 20)
        let source = try HTTPExportSource(baseURL: server.baseURL, operatorToken: RunningServer.operatorToken)
        let (schema, export) = try SeedExporter.currentManifests(from: source, pageLimit: 100)
        checker = SeedRecordChecker(manifest: schema)
        let scope = try #require(export.scope("catalog"))
        let page = try StrictJSONParser().parse(try source.scopePage(SeedPageRequest(
            scopeID: scope.id, pageToken: scope.pageToken, receipt: scope.continuation, expectedRowOrdinal: 0,
            limit: 100)))
        records = try #require(page.objectValue?["records"]?.arrayValue).compactMap(\.objectValue)
        try #require(records.count == 60)
    }

    func verified(_ record: JSONObject) -> Result<VerifiedSeedRecord, RecordFailure> {
        var checker = checker
        return checker.verify(.object(record))
    }

    func rule(_ record: JSONObject) -> String? {
        guard case .failure(let failure) = verified(record) else { return nil }
        return failure.rule
    }

    @Test("members and row fields in any order give the same verified record")
    func anyMemberOrderVerifiesAlike() throws {
        for record in records {
            guard case .success(let plain) = verified(record) else {
                Issue.record("a served record fails its check")
                return
            }
            let row = try #require(record["row"]?.objectValue)
            let reordered = JSONObject(record.members.reversed().map { member in
                member.key == "row" ? JSONMember("row", .object(JSONObject(row.members.reversed()))) : member
            })
            guard case .success(let other) = verified(reordered) else {
                Issue.record("a reordered record fails its check")
                return
            }
            #expect(other.row == plain.row)
            #expect(other.recordID == plain.recordID && other.digestHex == plain.digestHex)
        }
    }

    @Test("a missing, renamed or extra member is a record_shape failure; a null key is invalid_pk_object")
    func shapeFailuresAreTheKeyedLookups() throws {
        let record = records[0]
        #expect(rule(record) == nil)
        #expect(rule(JSONObject(Array(record.members.dropLast()))) == "record_shape")
        #expect(rule(JSONObject(record.members + [JSONMember("extra", .null)])) == "record_shape")
        let renamed = record.members.map { $0.key == "table" ? JSONMember("tablE", $0.value) : $0 }
        #expect(rule(JSONObject(renamed)) == "record_shape")
        let sameLength = record.members.map { $0.key == "pk" ? JSONMember("pK", $0.value) : $0 }
        #expect(rule(JSONObject(sameLength)) == "record_shape")
        let nullKey = record.members.map { $0.key == "pk" ? JSONMember("pk", .null) : $0 }
        #expect(rule(JSONObject(nullKey)) == "invalid_pk_object")
        let row = try #require(record["row"]?.objectValue)
        let missingField = record.members.map {
            $0.key == "row" ? JSONMember("row", .object(JSONObject(Array(row.members.dropFirst())))) : $0
        }
        #expect(rule(JSONObject(missingField))?.hasPrefix("invalid_row.") == true)
    }
}
