import SynchroStore
/// What one installed connect did (`spec/wire-protocol.md` §3). Names and dispositions only: never a cursor,
/// receipt or checksum.
public struct ConnectOutcome: Sendable, Equatable {
    /// The schema action the response selected (`none`, `replace` or `rebuild_local`).
    public var schemaAction: String
    /// Every seed receipt this connect dealt with — rejected by the local re-check, or sent and then continued,
    /// discarded or unassigned — in byte order of the scope ID. Empty when the store held no receipt.
    public var seedReceipts: [SeedReceiptOutcome]

    /// Creates an outcome.
    public init(schemaAction: String, seedReceipts: [SeedReceiptOutcome] = []) {
        self.schemaAction = schemaAction
        self.seedReceipts = seedReceipts
    }
}
