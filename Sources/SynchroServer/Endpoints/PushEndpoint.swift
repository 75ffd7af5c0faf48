import SQLiteKit
import SynchroProtocol

/// `POST /sync/push` (`spec/wire-protocol.md` §4): the dispatch precedence of §8.4 from structural
/// validation on, then one first execution (`Push/PushFirstExecution.swift`).
///
/// Order: exact body rules → client bound to another user (401) → retirement (409) → batch replay
/// or identity conflict → mutation identity reuse → generation gate (409) → schema gate (422) →
/// execution. Everything before execution only reads, so a rejection allocates no ledger state.
enum PushEndpoint {
    static func handle(
        _: JSONValue, context: EndpointContext, state: inout EngineState
    ) -> Result<EndpointReply, WireError> {
        do {
            return .success(try push(context: context, state: state))
        } catch let error as WireError {
            return .failure(error)
        } catch is PushIntegrityError {
            return .failure(WireError(.syncIntegrityFailure, "sync operation failed"))
        } catch {
            // The transaction rolled back: no completed batch exists and the exact request may be retried.
            return .failure(WireError(.temporaryUnavailable, "operation failed"))
        }
    }

    private static func push(context: EndpointContext, state: EngineState) throws -> EndpointReply {
        let request = try validated(context.rawBody, current: state.manifest)
        let db = state.store.db
        if let owner = try ClientRecord.boundUser(of: request.clientID, in: db), !owner.exactlyEquals(context.user) {
            throw WireError(.authRequired, "authentication required")
        }
        let client = try ClientRecord.load(user: context.user, client: request.clientID, from: db)
        if client?.retired == true { throw WireError(.clientRetired, "client retired") }

        let ledger = PushLedger(db: db, user: context.user, clientID: request.clientID)
        let (batchFingerprint, mutationFingerprints) = try fingerprints(of: request, user: context.user)
        if let completed = try ledger.completedBatch(request.batchID) {
            guard completed.fingerprint == batchFingerprint.digest else {
                throw WireError(.idempotencyConflict, "batch_id reused with different content")
            }
            return EndpointReply(status: completed.status, body: completed.body)
        }
        let reused = try MutationReuse.storedOutcomes(of: request, fingerprints: mutationFingerprints, ledger: ledger)

        guard let client, !client.generationExpired, client.generation == request.clientGeneration else {
            throw WireError.generationExpired(current: client?.generation ?? 0)
        }
        guard request.schema == state.manifest.reference else {
            throw WireError.schemaMismatch(current: state.manifest.reference, received: request.schema)
        }

        return try PushFirstExecution(
            request: request, batchFingerprint: batchFingerprint.digest, mutationFingerprints: mutationFingerprints,
            reused: reused, context: context
        ).run(store: state.store, current: state.manifest)
    }

    /// Every structural rule of the exact received octets, both body limits included (§4.1, §4.2,
    /// §9), plus the key rule of §2.6 for tables of the current manifest: the `pk` member names the
    /// table's key field and holds a valid key (key fields are immutable, so replays still pass).
    private static func validated(_ body: [UInt8], current: SchemaManifest) throws -> PushRequest {
        let request: PushRequest
        do {
            request = try ReceivedPushBody.parse(body, shape: .wire).request
        } catch {
            throw WireError.invalidRequest(error.rule + (error.mutationIndex.map { " (mutation \($0))" } ?? ""))
        }
        for (index, mutation) in request.mutations.enumerated() {
            guard let table = current.table(id: mutation.table) else { continue }
            guard mutation.pkFieldID.exactlyEquals(table.primaryKeyFieldID),
                  (try? RowIdentity(table: table, primaryKey: mutation.pkValue)) != nil
            else { throw WireError.invalidRequest("invalid_pk (mutation \(index))") }
        }
        return request
    }

    /// The batch fingerprint and every mutation fingerprint. Fingerprinting re-checks identity rules
    /// that structural validation already enforced, so its errors are still 400s.
    private static func fingerprints(of request: PushRequest, user: String) throws
        -> (batch: PushFingerprint, mutations: [PushFingerprint])
    {
        do {
            return (
                try PushFingerprint.batch(request, authenticatedUserID: user),
                try PushFingerprint.mutations(of: request, authenticatedUserID: user)
            )
        } catch {
            throw WireError.invalidRequest(error.rule)
        }
    }
}
