import SeedArtifacts

/// Passes every call through to a source unless the run was asked to stop, then throws
/// ``SeedArtifacts/SeedExportError/interrupted``: the export's safe points are its page calls, so SIGINT or SIGTERM
/// during a long export ends it within one page, and the exporter abandons its scratch file as for any failure.
public struct InterruptibleExportSource: SeedExportSource {
    let base: any SeedExportSource
    let isInterrupted: @Sendable () -> Bool

    public init(base: any SeedExportSource, isInterrupted: @escaping @Sendable () -> Bool) {
        self.base = base
        self.isInterrupted = isInterrupted
    }

    public func schemaManifest() throws(SeedExportError) -> [UInt8] {
        try check()
        return try base.schemaManifest()
    }

    public func exportManifest(pageLimit: Int64) throws(SeedExportError) -> [UInt8] {
        try check()
        return try base.exportManifest(pageLimit: pageLimit)
    }

    public func scopePage(_ request: SeedPageRequest) throws(SeedExportError) -> [UInt8] {
        try check()
        return try base.scopePage(request)
    }

    /// Forwarded: the base may commit here (the PostgreSQL source ends its export transaction), so a wrapper that
    /// kept the protocol's no-op default would leave the source unfinished.
    public func finish() throws(SeedExportError) {
        try check()
        try base.finish()
    }

    private func check() throws(SeedExportError) {
        if isInterrupted() { throw .interrupted }
    }
}
