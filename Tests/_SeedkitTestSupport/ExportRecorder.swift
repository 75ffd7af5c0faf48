import SeedArtifacts
import Synchronization

/// Forwards to an export source and keeps every response, in request order: the recording that the PostgreSQL
/// replay fixture (``ExportRecording``) answers from, taken from the very export it is compared with.
public final class ExportRecorder: SeedExportSource {
    private let base: any SeedExportSource
    private let parts = Mutex<(schema: [UInt8], manifest: [UInt8], pages: [ExportRecording.Page])>(([], [], []))

    public init(_ base: any SeedExportSource) {
        self.base = base
    }

    /// Everything recorded so far.
    public var recording: ExportRecording {
        parts.withLock { ExportRecording(schemaManifest: $0.schema, exportManifest: $0.manifest, pages: $0.pages) }
    }

    public func schemaManifest() throws(SeedExportError) -> [UInt8] {
        let bytes = try base.schemaManifest()
        parts.withLock { $0.schema = bytes }
        return bytes
    }

    public func exportManifest(pageLimit: Int64) throws(SeedExportError) -> [UInt8] {
        let bytes = try base.exportManifest(pageLimit: pageLimit)
        parts.withLock { $0.manifest = bytes }
        return bytes
    }

    public func scopePage(_ request: SeedPageRequest) throws(SeedExportError) -> [UInt8] {
        let bytes = try base.scopePage(request)
        parts.withLock {
            $0.pages.append(.init(
                scopeID: request.scopeID, pageToken: request.pageToken, expectedRowOrdinal: request.expectedRowOrdinal,
                body: bytes))
        }
        return bytes
    }

    public func finish() throws(SeedExportError) {
        try base.finish()
    }
}
