import SynchroStore
/// The deprecated inspection calls the client contract keeps ("Public native SDK surface": they keep their
/// published behaviour, return current records only, and fail when a legacy record is present). Each forwards
/// to the current method it names and refuses the whole answer with
/// ``SynchroDatabaseError/legacyRecordPresent(mutationID:)`` rather than drop or fake a legacy record.
extension SynchroDatabase {
    /// The unresolved queue records in local order: the entries the pending count counts (`spec/client-store.md`
    /// §4.4: not accepted, rejected, `exceeds_push_limit`, superseded or cancelled).
    @available(*, deprecated, message: "use inspectRetainedMutationRecords(), which also returns legacy records")
    public func inspectPendingMutations() throws(SynchroDatabaseError) -> [PendingMutation] {
        try Self.currentOnly(try inspectRetainedMutationRecords().filter { $0.state.isUnresolved })
    }

    /// Every retained queue record in local order, local terminal states included.
    @available(*, deprecated, message: "use inspectRetainedMutationRecords(), which also returns legacy records")
    public func inspectRetainedMutations() throws(SynchroDatabaseError) -> [PendingMutation] {
        try Self.currentOnly(try inspectRetainedMutationRecords())
    }

    /// Every retained rejection with its exact mutation and rejection JSON.
    @available(*, deprecated, message: "use inspectRejectedMutationRecords(), which also returns legacy records")
    public func inspectRejectedMutations() throws(SynchroDatabaseError) -> [RejectedMutationRecord] {
        let records = try inspectRejectedMutationRecords()
        if let legacy = records.first(where: { $0.payload == .legacy }) {
            throw .legacyRecordPresent(mutationID: legacy.mutationID)
        }
        return records
    }

    /// `records` when none is a legacy import (a record without protocol bindings).
    private static func currentOnly(_ records: [PendingMutation]) throws(SynchroDatabaseError) -> [PendingMutation] {
        if let legacy = records.first(where: { $0.binding == nil }) {
            throw .legacyRecordPresent(mutationID: legacy.mutationID)
        }
        return records
    }
}
