import SQLiteKit
import SynchroStore
import SynchroProtocol

/// Why a push step failed. Cases name rules and identifiers only, never row values or credentials.
public enum PushError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The store has no client ID, generation or active schema yet: connect first.
    case notConnected
    /// The reserved worst-case envelope alone breaks a request limit: a non-retryable blocking
    /// `invalid_request` failure with recovery action `none` (`spec/client-store.md` §8).
    case reservedEnvelopeTooLarge
    /// A ledger entry cannot be rendered as a protocol mutation.
    case ledgerIntegrity(mutationID: String, rule: String)
    /// A stored sealed batch is unreadable or does not match the ledger.
    case sealedBatchInvalid(batchID: String, rule: String)
    /// The transport failed before a response arrived; the sealed batch is unchanged and may be re-sent.
    case transport(SyncTransportFailure)
    /// A non-retryable request-level error response; every local state is preserved.
    case requestFailed(status: Int, code: String?)
    /// A 200 response broke the client contract (`spec/wire-protocol.md` §4.8): nothing was changed.
    case responseContract(rule: String)
    /// An outcome names a schema whose manifest the client does not hold.
    case outcomeSchemaUnavailable(version: Int64)
    /// A returned row failed its checksum or could not be projected into the local table.
    case rowVerification(mutationID: String, rule: String)
    /// No batch awaits renewal, or the store's binding did not change since it was sealed.
    case renewalNotPossible(rule: String)
    /// A store failure.
    case store(ClientStoreError)

    /// The stable code: the server's wire code for a refused request (`http_<status>` when it sent none), else
    /// the snake_case name of the case.
    public var code: String {
        switch self {
        case .notConnected: "not_connected"
        case .reservedEnvelopeTooLarge: "invalid_request"
        case .ledgerIntegrity: "ledger_integrity"
        case .sealedBatchInvalid: "sealed_batch_invalid"
        case .transport(let failure): failure.rule
        case .requestFailed(let status, let code): code ?? "http_\(status)"
        case .responseContract: "response_contract"
        case .outcomeSchemaUnavailable: "outcome_schema_unavailable"
        case .rowVerification: "row_verification"
        case .renewalNotPossible: "renewal_not_possible"
        case .store: "store"
        }
    }

    /// Whether sending the same sealed batch again may succeed: only after a transport failure.
    public var isRetryable: Bool {
        if case .transport(let failure) = self { return failure.isRetryable }
        return false
    }

    public var description: String {
        switch self {
        case .notConnected: "push: the store is not connected"
        case .reservedEnvelopeTooLarge: "push: invalid_request: the reserved envelope exceeds a request limit"
        case .ledgerIntegrity(let id, let rule): "push: ledger entry \(id) breaks \(rule)"
        case .sealedBatchInvalid(let id, let rule): "push: sealed batch \(id) is invalid (\(rule))"
        case .transport(let failure): "push: transport failed (\(failure))"
        case .requestFailed(let status, let code): "push: request failed with \(status) \(code ?? "(no code)")"
        case .responseContract(let rule): "push: response breaks the client contract (\(rule))"
        case .outcomeSchemaUnavailable(let version): "push: no manifest for outcome schema version \(version)"
        case .rowVerification(let id, let rule): "push: returned row of \(id) failed \(rule)"
        case .renewalNotPossible(let rule): "push: batch renewal not possible (\(rule))"
        case .store(let error): "push: \(error)"
        }
    }
}

/// Runs `body`, mapping every thrown error into ``PushError`` (store and SQLite errors keep their type).
func mappingPushErrors<Result>(_ body: () throws -> Result) throws(PushError) -> Result {
    do {
        return try body()
    } catch let error as PushError {
        throw error
    } catch let error as ClientStoreError {
        throw .store(error)
    } catch let error as SQLiteError {
        throw .store(.sqlite(error))
    } catch {
        // Only this module's and SynchroProtocol's typed errors reach here; none carries row values.
        throw .store(.sqlite(SQLiteError(reason: .sqlite, code: .error, message: String(describing: error))))
    }
}
