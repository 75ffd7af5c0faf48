import Foundation
import SQLiteKit
import SynchroClient
import SynchroProtocol
import Testing
import _SeedkitTestSupport
@testable import SeedArtifacts
@testable import SynchroStore

/// The row audit reads a large table in two halves on two connections (``SeedRowAudit/reopen``); it must record
/// exactly what one scan records. The split is forced on the fixture's 300 products by lowering the threshold.
@Suite("Row audit read in two halves")
struct SplitAuditTests {
    /// What one audit of `seed` recorded: its findings and evaluated checks, or the error that stopped it, and its
    /// result.
    struct Recorded: Equatable {
        var findings: [SeedFinding] = []
        var evaluated: Set<SeedCheck> = []
        var failure: String?
        var rows = 0
        var scopes: [String: String] = [:]
        var issues: [SeedCheck: Int] = [:]
    }

    static func audit(_ seed: String, split: Bool, limit: Int = 20) throws -> Recorded {
        let connection = try SeedFileProbe.openImmutable(seed, meter: BudgetMeter(VerificationBudget()))
        defer { connection.close() }
        let text = try connection.scalar(
            "SELECT value FROM _synchro_meta WHERE key = ?1", [.text(MetaKey.schemaManifest.rawValue)])?.textValue
        let manifest = try ClientManifest(bytes: Array((text ?? "").utf8))
        let scopes = try connection.query("SELECT scope_id FROM _synchro_scopes") { try $0.text(at: 0) }
        var audit = SeedRowAudit(connection: connection, manifest: manifest, knownScopes: Set(scopes),
                                 checks: .publication)
        if split {
            audit.reopen = { try SeedFileProbe.openImmutable(seed, meter: BudgetMeter(VerificationBudget())) }
            audit.splitMinimumRows = 2
            audit.splitMaximumRows = Int.max
        }
        let collector = FindingCollector(limit: limit)
        var recorded = Recorded()
        do {
            let result = try audit.run(into: collector)
            recorded.rows = result.rows
            recorded.scopes = result.scopes.mapValues { "\($0.edges) \($0.digest.map(Hex.encode) ?? "-")" }
            recorded.issues = result.issues
        } catch {
            recorded.failure = "\(error)"
        }
        (recorded.findings, recorded.evaluated) = collector.finish()
        return recorded
    }

    @Test("the clean export: same rows, scope tallies and no findings", .timeLimit(.minutes(2)))
    func cleanSeed() throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-split")
        let seed = try VerifyFixtures.cleanCopy(in: directory)
        let whole = try Self.audit(seed, split: false)
        let halves = try Self.audit(seed, split: true)
        #expect(halves == whole)
        #expect(halves.findings == [])
        #expect(halves.rows > VerifyFixtures.products)
        #expect(!halves.scopes.isEmpty)
    }

    @Test("every tampered seed: the same findings, in the same order, as one scan",
          .timeLimit(.minutes(2)), arguments: Tamper.corpus)
    func tamperedSeed(_ tamper: Tamper) throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-split")
        let seed = try VerifyFixtures.cleanCopy(in: directory)
        try tamper.apply(seed)
        guard let whole = try? Self.audit(seed, split: false) else { return }
        let halves = try Self.audit(seed, split: true)
        #expect(halves == whole, "\(tamper.name)")
    }

    @Test("damage in both halves: ordinals past the middle, the listing limit across halves")
    func damageInBothHalves() throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-split")
        let seed = try VerifyFixtures.cleanCopy(in: directory)
        // Every product altered (a digest mismatch per row); one row value invalid in each half; a row without
        // its version in the upper half.
        try VerifyFixtures.modify(seed, """
            UPDATE products SET title = title || '!';
            UPDATE products SET active = 0.5 WHERE id IN ((SELECT min(id) FROM products) + 10,
                                                          (SELECT max(id) FROM products) - 10);
            DELETE FROM _synchro_row_versions WHERE table_name = 'products'
                AND record_id = CAST((SELECT max(id) FROM products) - 3 AS TEXT);
            """)
        for limit in [1, 5, 1000] {
            let whole = try Self.audit(seed, split: false, limit: limit)
            let halves = try Self.audit(seed, split: true, limit: limit)
            #expect(halves == whole, "limit \(limit)")
            let invalid = halves.findings.filter { $0.check == .rowValueInvalid && $0.table == "products" }
            if limit == 1000 {
                #expect(invalid.map(\.row) == [11, Int64(VerifyFixtures.products - 10)])
                #expect(halves.findings.contains {
                    $0.check == .rowWithoutVersion && $0.row == Int64(VerifyFixtures.products - 3)
                })
            }
        }
    }
}
