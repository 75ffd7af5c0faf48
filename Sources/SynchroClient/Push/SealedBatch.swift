import SynchroStore
/// A batch as stored in `_synchro_push_batches`: what is sent, byte for byte, on every attempt.
public struct SealedBatch: Sendable, Equatable {
    /// Lowercase UUID of the batch.
    public let batchID: String
    /// The exact request body.
    public let body: [UInt8]
    /// Member mutation IDs in ordinal order.
    public let mutationIDs: [String]
    /// Whether the batch is an atomic group.
    public let isAtomic: Bool
}
