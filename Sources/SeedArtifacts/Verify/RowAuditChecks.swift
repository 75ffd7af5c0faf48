/// Which check each kind of row-audit finding is reported under: the publication checks (§6 item 6) and the
/// installer's validation (§7.1 items 12–15) run the same audit on different files.
struct RowAuditChecks {
    let rowVersion: SeedCheck
    let primaryKey: SeedCheck
    let primaryKeyDuplicate: SeedCheck
    let rowValue: SeedCheck
    let rowWithoutVersion: SeedCheck
    let versionWithoutRow: SeedCheck
    let rowDigest: SeedCheck
    let edge: SeedCheck
    let edgeWithoutRow: SeedCheck
    let edgeDigest: SeedCheck
    let rowWithoutEdge: SeedCheck

    static let publication = RowAuditChecks(
        rowVersion: .rowVersionInvalid, primaryKey: .primaryKeyStorage, primaryKeyDuplicate: .primaryKeyDuplicate,
        rowValue: .rowValueInvalid, rowWithoutVersion: .rowWithoutVersion, versionWithoutRow: .versionWithoutRow,
        rowDigest: .rowDigestMismatch, edge: .edgeInvalid, edgeWithoutRow: .edgeWithoutRow,
        edgeDigest: .edgeDigestMismatch, rowWithoutEdge: .rowWithoutEdge)

    static let installer = RowAuditChecks(
        rowVersion: .installerRowVersion, primaryKey: .installerMaterializedRows,
        primaryKeyDuplicate: .installerMaterializedRows, rowValue: .installerScopeDigest,
        rowWithoutVersion: .installerMaterializedRows, versionWithoutRow: .installerMaterializedRows,
        rowDigest: .installerScopeDigest, edge: .installerScopeRow, edgeWithoutRow: .installerMaterializedRows,
        edgeDigest: .installerScopeRow, rowWithoutEdge: .installerMaterializedRows)

    var all: [SeedCheck] {
        [rowVersion, primaryKey, primaryKeyDuplicate, rowValue, rowWithoutVersion, versionWithoutRow, rowDigest, edge,
         edgeWithoutRow, edgeDigest, rowWithoutEdge]
    }
}
