import SynchroProtocol

/// The outcome of verifying one seed: every finding in check order, how many checks ran and how many
/// materialized rows were re-digested.
public struct SeedVerificationReport: Sendable {
    /// The broken rules, in the order the checks ran (publication checks first, then installer checks).
    public let findings: [SeedFinding]
    /// The number of distinct checks (``SeedCheck`` values) that were evaluated.
    public let checks: Int
    /// The number of materialized rows re-read and re-digested by the publication checks.
    public let rows: Int

    /// Creates a report.
    public init(findings: [SeedFinding], checks: Int, rows: Int) {
        self.findings = findings
        self.checks = checks
        self.rows = rows
    }

    /// Whether the seed passed every check.
    public var ok: Bool { findings.isEmpty }

    /// Whether some finding reports `check`.
    public func contains(_ check: SeedCheck) -> Bool {
        findings.contains { $0.check == check }
    }

    /// `{"checks":N,"findings":[…],"ok":bool,"rows":N}` (the `seedkit verify --json` document).
    public var json: JSONValue {
        .object(JSONObject([
            JSONMember("findings", .array(findings.map(\.json))),
            JSONMember("checks", .number(JSONNumber(Int64(checks)))),
            JSONMember("rows", .number(JSONNumber(Int64(rows)))),
            JSONMember("ok", .bool(ok)),
        ]))
    }
}
