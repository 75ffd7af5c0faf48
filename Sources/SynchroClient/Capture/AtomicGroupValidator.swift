import SQLiteKit
import SynchroStore
import SynchroProtocol

/// The commit-time validation of an atomic write group, in the contract's order (`spec/integrity.md` §5.3):
///
/// 1. no delete of a row followed by a later entry for it (``AtomicGroupInvalidReason/deleteFollowedByWrite``);
/// 2. chain normalization over the group's rows (no failure);
/// 3. at most 1000 normalized mutations (``AtomicGroupInvalidReason/tooManyMutations``);
/// 4. each normalized mutation ≤ 65,536 canonical octets and ≤ 256 columns
///    (``AtomicGroupInvalidReason/mutationTooLarge``);
/// 5. the worst-case request — atomic reserved envelope with the real client ID, real base versions or the
///    64-octet placeholder — ≤ 1,048,576 octets as body and as RFC 8785 form
///    (``AtomicGroupInvalidReason/requestTooLarge``).
///
/// A group that captured nothing passes (it commits as an ordinary write).
struct AtomicGroupValidator {
    let connection: Connection
    let clientID: String
    let uuids: UUIDSource
    let clock: ClientClock

    func validate(groupID: String) throws {
        let captured = try connection.scalar(
            "SELECT count(*) FROM _synchro_pending_changes WHERE atomic_group_id = ?", [.text(groupID)]
        )?.integerValue ?? 0
        guard captured > 0 else { return }
        let normalized = try ChainNormalizer(connection: connection, uuids: uuids, clock: clock)
            .normalizeGroup(groupID)
        guard normalized.count <= PushLimits.maxMutationsPerRequest else {
            throw AtomicGroupInvalid(reason: .tooManyMutations)
        }
        var measurements: [PushLimits.MutationMeasurement] = []
        for entry in normalized {
            let mutation: PushMutation
            do {
                mutation = try entry.pushMutation(unknownBasePlaceholder: PushLimits.baseVersionPlaceholder)
            } catch .notAProtocolMutation(_, let rule) where Self.sizeRules.contains(rule) {
                throw AtomicGroupInvalid(reason: .mutationTooLarge)
            } catch {
                throw ClientStoreError.ledgerIntegrity(error)
            }
            let measurement = PushLimits.measure(mutation)
            guard measurement.isWithinMutationLimits else { throw AtomicGroupInvalid(reason: .mutationTooLarge) }
            measurements.append(measurement)
        }
        // The real client ID is the bound one once bound (it may have replaced the configured one).
        let realClientID = try MetaStore.value(.clientServerID, on: connection) ?? clientID
        let envelope = try PushLimits.reservedEnvelope(clientID: realClientID)
        let separators = max(measurements.count - 1, 0)
        let body = envelope.bodyOctets(atomic: true) + measurements.reduce(0) { $0 + $1.elementBodyOctets } + separators
        let canonical = envelope.canonicalOctets(atomic: true)
            + measurements.reduce(0) { $0 + $1.elementCanonicalOctets } + separators
        guard body <= PushLimits.maxRequestBodyOctets, canonical <= PushLimits.maxCanonicalRequestOctets else {
            throw AtomicGroupInvalid(reason: .requestTooLarge)
        }
    }

    /// Push validation rules that are the per-mutation limits (N > 65,536 or C > 256).
    private static let sizeRules: Set<String> = ["normalized_mutation_too_large", "too_many_columns"]
}
