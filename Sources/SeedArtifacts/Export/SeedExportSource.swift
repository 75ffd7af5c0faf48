/// Where a seed's rows come from (`spec/seed-format.md` §3): the schema manifest, one export manifest and the
/// pages of every portable scope, all from one consistent snapshot. Sources return the raw JSON octets;
/// every check happens in the exporter, so each source gets the same verification.
///
/// The reference server's operator routes are one source (``HTTPExportSource``); upstream's PostgreSQL functions
/// are the other (``PostgresExportSource``), which calls `synchro.synchro_schema_manifest()`,
/// `synchro_portable_seed_manifest(page_limit)` and `synchro_portable_seed_scope(…)` inside one
/// `SERIALIZABLE READ ONLY DEFERRABLE` transaction; it rewrites a `jsonb` answer's text to RFC 8785 before returning
/// it, and hands a `json` page that is already in its exact form over unparsed.
///
/// Every export calls ``schemaManifest()`` first (a source that holds a snapshot starts it there), then
/// ``exportManifest(pageLimit:)``, the pages, and ``finish()`` once every row is read and before anything is
/// published.
public protocol SeedExportSource: Sendable {
    /// The schema manifest object the export is bound to; the first call of every export.
    func schemaManifest() throws(SeedExportError) -> [UInt8]
    /// Starts (or returns) the export: the export manifest object with receipts and first page tokens.
    func exportManifest(pageLimit: Int64) throws(SeedExportError) -> [UInt8]
    /// One page of one scope: `{scope, records, page_token, has_more}`.
    func scopePage(_ request: SeedPageRequest) throws(SeedExportError) -> [UInt8]
    /// Every page was read: a source holding a snapshot ends it here (a commit that can still fail, so the
    /// exporter publishes only after it returns).
    func finish() throws(SeedExportError)
}

extension SeedExportSource {
    /// Stateless sources (HTTP) have nothing to end.
    public func finish() throws(SeedExportError) {}
}

/// The arguments of one page call (`synchro_portable_seed_scope`).
public struct SeedPageRequest: Sendable {
    public let scopeID: String
    /// The token of this page, exactly as the previous page (or the manifest) issued it.
    public let pageToken: String
    /// The scope's continuation receipt, exactly as the manifest issued it.
    public let receipt: String
    /// The row ordinal the page must start at.
    public let expectedRowOrdinal: Int64
    public let limit: Int64

    public init(scopeID: String, pageToken: String, receipt: String, expectedRowOrdinal: Int64, limit: Int64) {
        self.scopeID = scopeID
        self.pageToken = pageToken
        self.receipt = receipt
        self.expectedRowOrdinal = expectedRowOrdinal
        self.limit = limit
    }
}
