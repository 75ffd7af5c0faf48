import SeedArtifacts
import Synchronization
import SynchroProtocol

/// Passes every call through to a source and keeps the export manifest it returned, so the runner can record
/// the state of the export it actually published (generations are not part of ``SeedExportReport``).
final class RecordingExportSource: SeedExportSource {
    /// The source every call goes to.
    let base: any SeedExportSource
    private let manifest = Mutex<[UInt8]?>(nil)

    init(_ base: any SeedExportSource) {
        self.base = base
    }

    /// The last export manifest, parsed; nil before one was returned or when it does not parse.
    var exportManifest: SeedExportManifest? {
        guard let bytes = manifest.withLock({ $0 }), let json = try? StrictJSONParser().parse(bytes) else { return nil }
        return try? SeedExportManifest(json: json)
    }

    func schemaManifest() throws(SeedExportError) -> [UInt8] {
        try base.schemaManifest()
    }

    func exportManifest(pageLimit: Int64) throws(SeedExportError) -> [UInt8] {
        let bytes = try base.exportManifest(pageLimit: pageLimit)
        manifest.withLock { $0 = bytes }
        return bytes
    }

    func scopePage(_ request: SeedPageRequest) throws(SeedExportError) -> [UInt8] {
        try base.scopePage(request)
    }

    func finish() throws(SeedExportError) {
        try base.finish()
    }
}
