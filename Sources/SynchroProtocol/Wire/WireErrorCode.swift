/// Every error code of protocol 3 with its HTTP status and `retryable` value
/// (`spec/wire-protocol.md` §8.2).
public enum WireErrorCode: String, Sendable, CaseIterable {
    case invalidRequest = "invalid_request"
    case invalidSchemaReference = "invalid_schema_reference"
    case authRequired = "auth_required"
    case idempotencyConflict = "idempotency_conflict"
    case clientRetired = "client_retired"
    case clientGenerationExpired = "client_generation_expired"
    case rebuildRestartRequired = "rebuild_restart_required"
    case schemaMismatch = "schema_mismatch"
    case upgradeRequired = "upgrade_required"
    case retryLater = "retry_later"
    case syncIntegrityFailure = "sync_integrity_failure"
    case capturePending = "capture_pending"
    case temporaryUnavailable = "temporary_unavailable"

    /// The HTTP status that carries this code.
    public var httpStatus: Int {
        switch self {
        case .invalidRequest, .invalidSchemaReference: 400
        case .authRequired: 401
        case .idempotencyConflict, .clientRetired, .clientGenerationExpired, .rebuildRestartRequired: 409
        case .schemaMismatch: 422
        case .upgradeRequired: 426
        case .retryLater: 429
        case .syncIntegrityFailure: 500
        case .capturePending, .temporaryUnavailable: 503
        }
    }

    /// Whether a client may retry the exact request (only 429 and 503 are retryable).
    public var retryable: Bool {
        switch self {
        case .retryLater, .capturePending, .temporaryUnavailable: true
        default: false
        }
    }

    /// Whether responses with this code carry `Retry-After` (every 429 and 503, §8.3).
    public var carriesRetryAfter: Bool { httpStatus == 429 || httpStatus == 503 }
}

/// The error envelope `{"error": {"code", "message", "retryable", …extras}}` (§8.1).
public struct WireError: Error, Sendable, Equatable, CustomStringConvertible {
    public let code: WireErrorCode
    /// Bounded text for people; never rows, identities, credentials, cursors or continuations.
    public let message: String
    /// Code-specific members (§8.2), e.g. `current_schema`, `scope_id`.
    public let extras: [JSONMember]

    public init(_ code: WireErrorCode, _ message: String, extras: [JSONMember] = []) {
        self.code = code
        self.message = message
        self.extras = extras
    }

    public var description: String { "\(code.rawValue): \(message)" }

    /// The response body.
    public var json: JSONValue {
        let members = [
            JSONMember("code", .string(code.rawValue)),
            JSONMember("message", .string(message)),
            JSONMember("retryable", .bool(code.retryable)),
        ] + extras
        return .object(JSONObject([JSONMember("error", .object(JSONObject(members)))]))
    }

    /// 400 `invalid_request` for a structural rule; the rule name is safe to show (it is ours).
    public static func invalidRequest(_ rule: String) -> WireError {
        WireError(.invalidRequest, "invalid request: \(rule)")
    }

    /// 422 `schema_mismatch` with both references.
    public static func schemaMismatch(current: SchemaReference, received: SchemaReference) -> WireError {
        WireError(.schemaMismatch, "request schema is stale", extras: [
            JSONMember("current_schema", current.json), JSONMember("received_schema", received.json),
        ])
    }

    /// 409 `client_generation_expired` with the current generation.
    public static func generationExpired(current: Int64) -> WireError {
        WireError(.clientGenerationExpired, "client generation expired", extras: [
            JSONMember("current_client_generation", .number(JSONNumber(current))),
        ])
    }
}
