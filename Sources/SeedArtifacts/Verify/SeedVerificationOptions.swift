/// What ``SeedVerifier`` checks and where it works.
public struct SeedVerificationOptions: Sendable {
    /// The `snapshot_complete` value the metadata must carry: `1` for a published seed, `0` for the exporter's
    /// staged file (`spec/seed-format.md` §5 steps 16 and 18).
    public var expectedSnapshotComplete: Int
    /// Whether to run the device installer's validation (§7.1) on a migrated copy after the publication checks.
    /// Off for a staged file, which the installer would reject for `snapshot_complete = 0`.
    public var includeInstallerChecks: Bool
    /// The directory that holds an unpacked `.zst` seed and, when the installer checks cannot migrate their copy in
    /// memory (a seed over 96 MiB, a WAL-mode header), the overlay file of that copy (only the blocks the migration
    /// writes; a byte copy with a SQLite without URI filenames); nil for the system temporary directory.
    public var temporaryDirectory: String?
    /// At most this many findings are listed per check; the rest are summarized in one finding.
    public var maximumFindingsPerCheck: Int
    /// A `.zst` seed may unpack to at most this many bytes.
    public var maximumUnpackedBytes: Int64
    /// The time and SQLite work the whole verification may take (`budget_exceeded` beyond).
    public var budget: VerificationBudget

    /// Options for a published seed: every check, `snapshot_complete = 1`.
    public init(
        expectedSnapshotComplete: Int = 1, includeInstallerChecks: Bool = true, temporaryDirectory: String? = nil,
        maximumFindingsPerCheck: Int = 20, maximumUnpackedBytes: Int64 = PackOptions.defaultMaximumOutputBytes,
        budget: VerificationBudget = VerificationBudget()
    ) {
        self.budget = budget
        self.expectedSnapshotComplete = expectedSnapshotComplete
        self.includeInstallerChecks = includeInstallerChecks
        self.temporaryDirectory = temporaryDirectory
        self.maximumFindingsPerCheck = maximumFindingsPerCheck
        self.maximumUnpackedBytes = maximumUnpackedBytes
    }

    /// The exporter's self-verification (§6) only, expecting `snapshotComplete`.
    public static func publication(snapshotComplete: Int) -> SeedVerificationOptions {
        SeedVerificationOptions(expectedSnapshotComplete: snapshotComplete, includeInstallerChecks: false)
    }
}
