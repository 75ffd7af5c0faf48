import SQLiteKit
import SynchroStore
import SynchroProtocol

/// Batch selection and sealing (`spec/client-store.md` §8, `spec/integrity.md` §5.2–§5.3,
/// `spec/wire-protocol.md` §4.9): the single `pending` batch, when one exists, is returned unchanged and never
/// re-measured; otherwise the next batch is selected, measured against the reserved worst-case envelope and
/// persisted — batch row, member rows and ledger transitions — in one transaction before any transmission.
public struct BatchSealer: Sendable {
    /// The store the ledger and batches live in.
    public let store: ClientStore
    /// Most ungrouped mutations per batch (atomic batches ignore it); never above the protocol's 1000.
    public let batchSize: Int

    public init(store: ClientStore, batchSize: Int = 100) {
        self.store = store
        self.batchSize = max(1, min(batchSize, PushLimits.maxMutationsPerRequest))
    }

    /// The batch to send next: the stored pending batch, else a newly sealed one, else nil when nothing is
    /// sendable. Normalization runs first, as it must before any member is sealed.
    public func nextBatch() throws(PushError) -> SealedBatch? {
        if let pending = try store.pendingBatch() { return pending }
        do {
            try store.normalizePendingMutations()
        } catch {
            throw .store(error)
        }
        do {
            let (batch, sealed) = try store.withEnginePush { connection throws(PushError) -> (SealedBatch?, Bool) in
                try mappingPushErrors {
                    try connection.transaction(kind: .immediate) { () throws -> (SealedBatch?, Bool) in
                        // Another sealer may have committed a batch between the check above and this one.
                        if let pending = try PendingBatches.load(on: connection) { return (pending, false) }
                        let batch = try seal(on: connection)
                        return (batch, batch != nil)
                    }
                }
            }
            if sealed { SyncCrashPoint.pushSealed.reached() }
            return batch
        } catch .reservedEnvelopeTooLarge {
            // The seal transaction rolled back; the blocking failure is recorded on its own so that it survives.
            try recordEnvelopeBlockingError()
            throw .reservedEnvelopeTooLarge
        }
    }

    /// The non-retryable blocking `invalid_request` failure with recovery action `none`
    /// (`spec/client-store.md` §4.12, §8): a local error, no HTTP status.
    private func recordEnvelopeBlockingError() throws(PushError) {
        let now = store.configuration.clock.timestamp()
        try store.withEnginePush { connection throws(PushError) in
            try mappingPushErrors {
                try connection.run("""
                    INSERT OR REPLACE INTO _synchro_blocking_error
                        (singleton, operation, code, retryable, message, recovery_action, metadata_json, created_at)
                    VALUES (1, 'push', 'invalid_request', 0, 'the push envelope alone exceeds a request limit',
                            'none', '{}', ?)
                    """, [.text(now)])
            }
        }
    }

    private func seal(on connection: Connection) throws -> SealedBatch? {
        let binding = try PushBinding.current(on: connection)
        let envelope: PushLimits.ReservedEnvelope
        do {
            envelope = try PushLimits.reservedEnvelope(clientID: binding.clientID)
        } catch {
            throw PushError.notConnected
        }
        // Nothing can ever be sealed when the envelope alone breaks a limit (checked for both shapes, so an
        // atomic group fails the same way).
        for atomic in [false, true]
        where envelope.bodyOctets(atomic: atomic) > PushLimits.maxRequestBodyOctets
            || envelope.canonicalOctets(atomic: atomic) > PushLimits.maxCanonicalRequestOctets {
            throw PushError.reservedEnvelopeTooLarge
        }
        let candidates = try MutationLedger.entriesInCaptureOrder(
            where: "candidate.lifecycle_state = 'unsealed' AND candidate.dependency_mutation_id IS NULL "
                + "AND (candidate.operation = 'insert' OR candidate.base_version IS NOT NULL)",
            on: connection)
        guard let first = candidates.first else { return nil }
        if let group = first.atomicGroupID {
            return try sealGroup(group, candidates: candidates, binding: binding, on: connection)
        }
        var members: [PushMutation] = []
        var bodyTotal = envelope.bodyOctets(atomic: false)
        var canonicalTotal = envelope.canonicalOctets(atomic: false)
        var excludedAny = false
        // The leading run of ungrouped candidates: the first grouped one ends the batch.
        for candidate in candidates {
            guard candidate.atomicGroupID == nil, members.count < batchSize else { break }
            guard let mutation = try Self.protocolMutationWithinLimits(candidate) else {
                try Self.markExceedsPushLimit(candidate.mutationID, on: connection)
                excludedAny = true
                continue
            }
            let measured = PushLimits.measure(mutation)
            let aloneFits = measured.isWithinMutationLimits
                && envelope.bodyOctets(atomic: false) + measured.elementBodyOctets <= PushLimits.maxRequestBodyOctets
                && envelope.canonicalOctets(atomic: false) + measured.elementCanonicalOctets
                    <= PushLimits.maxCanonicalRequestOctets
            guard aloneFits else {
                // Over a limit even alone in an empty batch: never sent, its same-row dependents are blocked.
                try Self.markExceedsPushLimit(candidate.mutationID, on: connection)
                excludedAny = true
                continue
            }
            let separator = members.isEmpty ? 0 : 1
            guard bodyTotal + separator + measured.elementBodyOctets <= PushLimits.maxRequestBodyOctets,
                  canonicalTotal + separator + measured.elementCanonicalOctets
                    <= PushLimits.maxCanonicalRequestOctets
            else {
                // It merely does not fit: it starts the next batch.
                break
            }
            bodyTotal += separator + measured.elementBodyOctets
            canonicalTotal += separator + measured.elementCanonicalOctets
            members.append(mutation)
        }
        if members.isEmpty && excludedAny {
            // Only excluded entries led the queue (now terminal): select again, e.g. an atomic group behind them.
            return try seal(on: connection)
        }
        return try persist(members, atomic: false, binding: binding, on: connection)
    }

    private func sealGroup(
        _ group: String, candidates: [PendingMutation], binding: PushBinding, on connection: Connection
    ) throws -> SealedBatch? {
        let members = try MutationLedger.entriesInCaptureOrder(
            where: "candidate.atomic_group_id = ? AND candidate.lifecycle_state NOT IN "
                + "('superseded_before_send', 'cancelled_before_send')",
            [.text(group)], on: connection)
        let sendable = Set(candidates.map(\.mutationID))
        // The whole group or nothing: a member that is sealed, waits on a predecessor or lacks a base makes
        // the group wait.
        guard !members.isEmpty, members.allSatisfy({ sendable.contains($0.mutationID) }) else { return nil }
        let mutations = try members.map(Self.protocolMutation)
        let request = try Self.request(mutations, atomic: true, batchID: PushLimits.reservedBatchID,
                                       binding: binding)
        guard PushLimits.measure(request).isWithinSealLimits else {
            // Commit-time validation makes this unreachable for groups captured by this store; a group that
            // cannot be sent is never split, so every member is excluded together.
            for member in members { try Self.markExceedsPushLimit(member.mutationID, on: connection) }
            return nil
        }
        return try persist(mutations, atomic: true, binding: binding, on: connection)
    }

    private func persist(
        _ mutations: [PushMutation], atomic: Bool, binding: PushBinding, on connection: Connection
    ) throws -> SealedBatch? {
        guard !mutations.isEmpty else { return nil }
        let batchID = store.configuration.uuids.next()
        let request = try Self.request(mutations, atomic: atomic, batchID: batchID, binding: binding)
        let body = request.wireBody()
        let ids = mutations.map(\.mutationID)
        try PendingBatches.insert(
            batchID: batchID, body: body, mutationIDs: ids, schemaJSON: binding.localSchemaJSON,
            now: store.configuration.clock.timestamp(), on: connection)
        return SealedBatch(batchID: batchID, body: body, mutationIDs: ids, isAtomic: atomic)
    }

    static func protocolMutation(_ entry: PendingMutation) throws -> PushMutation {
        do {
            return try entry.pushMutation()
        } catch {
            throw PushError.ledgerIntegrity(mutationID: entry.mutationID, rule: "\(error)")
        }
    }

    /// The protocol mutation of `entry`, or nil when it alone breaks a per-mutation limit (its normalized form
    /// or its column count), which `PushMutation` refuses to construct.
    static func protocolMutationWithinLimits(_ entry: PendingMutation) throws -> PushMutation? {
        do {
            return try entry.pushMutation()
        } catch .notAProtocolMutation(_, let rule) where Self.mutationLimitRules.contains(rule) {
            return nil
        } catch {
            throw PushError.ledgerIntegrity(mutationID: entry.mutationID, rule: "\(error)")
        }
    }

    /// The rules of `PushValidationError` that a per-mutation limit breaks.
    static let mutationLimitRules: Set<String> = ["normalized_mutation_too_large", "too_many_columns"]

    static func request(
        _ mutations: [PushMutation], atomic: Bool, batchID: String, binding: PushBinding
    ) throws -> PushRequest {
        do {
            return try PushRequest(
                clientID: binding.clientID, clientGeneration: binding.generation, batchID: batchID,
                schema: binding.schema, isAtomic: atomic, mutations: mutations)
        } catch {
            throw PushError.sealedBatchInvalid(batchID: batchID, rule: "\(error)")
        }
    }

    /// `exceeds_push_limit` for `mutationID`, and `blocked_by_predecessor` for its unresolved dependents.
    static func markExceedsPushLimit(_ mutationID: String, on connection: Connection) throws {
        try connection.run(
            "UPDATE _synchro_pending_changes SET lifecycle_state = 'exceeds_push_limit' WHERE mutation_id = ?",
            [.text(mutationID)])
        try LedgerTransitions.blockDependents(of: mutationID, on: connection)
    }
}
