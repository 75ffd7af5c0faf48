import Foundation
import SQLiteKit
import SeedArtifacts
import Synchronization
import Testing
import _SeedkitTestSupport

/// Crafted seeds that try to make the verifier run code of their own (issue #19): each is refused with a finding
/// — on main they kept `verify` and `install` busy forever — and nothing is installed. The time limit is the
/// failure mode of a hang; the tests assert findings, not durations.
struct HostileSeed: Sendable, CustomTestStringConvertible {
    let name: String
    let sql: String

    var testDescription: String { name }

    /// An endless query: a recursive CTE without a bound.
    static let endless = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c"

    static let corpus: [HostileSeed] = [
        HostileSeed(name: "an endless trigger on grdb_migrations (fired by the migration)", sql: """
            CREATE TRIGGER evil AFTER INSERT ON grdb_migrations BEGIN
            SELECT count(*) FROM (\(endless)); END;
            """),
        HostileSeed(name: "a synced table replaced by an endless view", sql: """
            DROP TABLE categories;
            CREATE VIEW categories AS SELECT x AS id, 'n' AS name FROM (\(endless));
            """),
        HostileSeed(name: "an internal table replaced by an endless view", sql: """
            DROP TABLE _synchro_seed_receipts;
            CREATE VIEW _synchro_seed_receipts AS SELECT x AS scope_id FROM (\(endless));
            """),
        HostileSeed(name: "a capture trigger whose body never ends", sql: """
            DROP TRIGGER "_synchro_cdc_update_products";
            CREATE TRIGGER "_synchro_cdc_update_products" AFTER UPDATE ON "products" BEGIN
            SELECT count(*) FROM (\(endless)); END;
            """),
        HostileSeed(name: "an endless trigger on inserts into _synchro_meta", sql: """
            CREATE TRIGGER meta_evil AFTER INSERT ON _synchro_meta BEGIN SELECT count(*) FROM (\(endless)); END;
            """),
    ]
}

@Suite("Hostile seeds: verification never runs the seed's code and is bounded")
struct HostileSeedTests {
    @Test("verify and install answer with executable_schema, and nothing is installed",
          .timeLimit(.minutes(1)), arguments: HostileSeed.corpus)
    func refusedBeforeAnythingRuns(_ seed: HostileSeed) throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-hostile")
        let path = try VerifyFixtures.cleanCopy(in: directory)
        try VerifyFixtures.modify(path, seed.sql)
        let leftovers = try VerifyFixtures.strayFiles(in: directory, keeping: [])

        let report = try SeedVerifier.verify(path: path)
        #expect(!report.ok)
        #expect(report.contains(.executableSchema), "findings: \(report.findings)")
        #expect(!report.contains(.budgetExceeded), "the gate answers before any budget matters")

        let destination = directory.path("app.db")
        do {
            _ = try SeedInstaller.install(seed: path, to: destination)
            Issue.record("the hostile seed was installed")
        } catch {
            guard case .invalidSeed(let rejection) = error else {
                Issue.record("unexpected error \(error)")
                return
            }
            #expect(rejection.contains(.executableSchema), "findings: \(rejection.findings)")
        }
        #expect(!FileManager.default.fileExists(atPath: destination))
        #expect(try VerifyFixtures.strayFiles(in: directory, keeping: []) == leftovers)
    }

    @Test("the clean seed passes the gate: its capture triggers are the generator's text")
    func cleanSeedPassesTheGate() throws {
        let report = try SeedVerifier.verify(path: try VerifyFixtures.exports.get().first)
        #expect(report.findings == [])
    }

    @Test("a step budget ends the verification with budget_exceeded, not with SQLite errors")
    func stepBudget() throws {
        let seed = try VerifyFixtures.exports.get().first
        let options = SeedVerificationOptions(budget: VerificationBudget(maximumSteps: 0))
        let report = try SeedVerifier.verify(path: seed, options: options)
        #expect(!report.ok)
        #expect(report.findings.first?.check == .budgetExceeded, "findings: \(report.findings)")
        #expect(report.findings.first?.message.contains("steps") == true)
        #expect(!report.findings.contains { $0.message.contains("SQLITE_INTERRUPT") })
    }

    @Test("a time budget, measured on the injected clock, ends install with budget_exceeded")
    func timeBudget() throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-hostile")
        let seed = try VerifyFixtures.cleanCopy(in: directory)
        // Each reading of the clock is one minute later than the previous one.
        let minutes = Atomic<UInt64>(0)
        let clock: @Sendable () -> UInt64 = { minutes.add(60_000_000_000, ordering: .relaxed).newValue }
        let budget = VerificationBudget(maximumNanoseconds: 30 * 60_000_000_000, now: clock)
        let destination = directory.path("app.db")
        do {
            _ = try SeedInstaller.install(seed: seed, to: destination, options: SeedInstallOptions(budget: budget))
            Issue.record("the seed was installed past its budget")
        } catch {
            guard case .invalidSeed(let rejection) = error else {
                Issue.record("unexpected error \(error)")
                return
            }
            #expect(rejection.findings.first?.check == .budgetExceeded, "findings: \(rejection.findings)")
            #expect(rejection.findings.first?.message.contains("time limit of 1800 s") == true)
        }
        #expect(!FileManager.default.fileExists(atPath: destination))
    }
}
