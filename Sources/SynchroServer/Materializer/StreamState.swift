import SQLiteKit

/// The lineage counters every cursor and rebuild continuation binds (`spec/wire-protocol.md` §2.8):
/// a change of any of them makes tokens issued before it stale.
struct StreamGenerations: Equatable {
    var stream: Int64
    var membership: Int64
    var retention: Int64

    static func load(from store: ServerStore) throws -> StreamGenerations {
        StreamGenerations(
            stream: try store.metaInteger(StreamState.streamGenerationKey),
            membership: try store.metaInteger(StreamState.membershipGenerationKey),
            retention: try store.metaInteger(StreamState.retentionGenerationKey))
    }
}

/// Where materialization stands: the last capture LSN turned into stream entries and the last
/// stream position issued. Both live in `server_meta` and move only together, in the
/// materializer's transactions, so reading them inside one transaction gives a consistent boundary.
struct StreamState {
    static let materializedLSNKey = "materialized_lsn"
    static let streamPositionKey = "stream_position"
    static let streamGenerationKey = "stream_generation"
    static let membershipGenerationKey = "membership_generation"
    static let retentionGenerationKey = "retention_generation"

    /// Every capture entry with an LSN at or below this one is visible in projection, membership and stream.
    var materializedLSN: Int64
    /// The greatest stream position issued; 0 at generation start (the initial load has no entries).
    var position: Int64
    var generations: StreamGenerations

    static func load(from store: ServerStore) throws -> StreamState {
        StreamState(
            materializedLSN: try store.metaInteger(materializedLSNKey),
            position: try store.metaInteger(streamPositionKey),
            generations: try StreamGenerations.load(from: store))
    }

    /// True while an accepted write at `fenceLSN` is not yet materialized (`capture_pending`).
    func isPending(fenceLSN: Int64) -> Bool { fenceLSN > materializedLSN }
}
