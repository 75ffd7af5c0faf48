import SQLiteKit
import SynchroStore
import SynchroProtocol

/// One HTTP exchange as the sync engine sees it (connect, push, pull, rebuild): a protocol POST of exact octets
/// and the reply that came back. `SynchroClient` does not link the libcurl transport; the host (or a test) adapts
/// `SynchroHTTP` to this. Throwing means no response arrived (a lost response looks like a lost request).
public protocol SyncTransport: Sendable {
    /// POSTs `body` to `path` (e.g. `/sync/pull`) with the protocol headers and returns the reply.
    func post(path: String, body: [UInt8]) throws -> SyncReply
}

/// The status, headers and exact body of one reply.
public struct SyncReply: Sendable {
    /// HTTP status.
    public let status: Int
    /// Header name/value pairs in received order (push reads `Retry-After`).
    public let headers: [(name: String, value: String)]
    /// Exact response body octets.
    public let body: [UInt8]

    /// Creates a reply.
    public init(status: Int, headers: [(name: String, value: String)] = [], body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The first header named `name` (case-insensitive).
    public func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }
}

/// Why a sync exchange failed. Cases name members and rules only: never row values, tokens or cursors.
public enum SyncError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A 200 body broke the response contract (`spec/wire-protocol.md` §2.1): non-retryable, nothing committed.
    case contract(rule: String, member: String)
    /// A non-200 reply that is not to be sent again (``ErrorReply``), with the error code of its envelope when it
    /// had one.
    case http(status: Int, code: String?)
    /// A non-200 reply asking for the same request later: an envelope with `retryable: true`, or without an
    /// envelope a 429, 502, 503 or 504 (a proxy's page). Retried after backoff, at least its `Retry-After`.
    case retryLater(status: Int, code: String?)
    /// A connect schema action this engine does not apply yet (only `none` and a fresh `replace` are).
    case schemaActionNotSupported(action: String)
    /// A received rebuild page re-used a known page identity with different content (non-retryable).
    case rebuildPageConflict(scope: String)
    /// The final rebuild page's checksum did not match the recomputed local digest; a new attempt is needed.
    case rebuildChecksumMismatch(scope: String)
    /// Local state does not allow the operation (e.g. no schema or generation yet, no attempt for a scope).
    case invalidState(reason: String)
    /// The local store failed.
    case store(ClientStoreError)
    /// The transport failed before a reply arrived, of the kind the host named (``SyncTransportFailure``).
    case transport(SyncTransportFailure)

    /// Stable snake_case name of the failure.
    public var rule: String {
        switch self {
        case .contract(let rule, _): "contract.\(rule)"
        case .http, .retryLater: "http"
        case .schemaActionNotSupported: "schema_action_not_supported"
        case .rebuildPageConflict: "rebuild_page_conflict"
        case .rebuildChecksumMismatch: "rebuild_checksum_mismatch"
        case .invalidState: "invalid_state"
        case .store(let error): "store.\(error.rule)"
        case .transport: "transport"
        }
    }

    /// The stable code: the server's wire code for a refusal (`http_<status>` when it sent none), else ``rule``.
    public var code: String {
        switch self {
        case .http(let status, let code), .retryLater(let status, let code): code ?? "http_\(status)"
        case .transport(let failure): failure.rule
        default: rule
        }
    }

    /// Whether the same request may succeed when sent again: a transport failure and ``retryLater(status:code:)``.
    public var isRetryable: Bool {
        switch self {
        case .retryLater: true
        case .transport(let failure): failure.isRetryable
        default: false
        }
    }

    /// True for `503 capture_pending`, which leaves every local cursor and row as it was.
    public var isCapturePending: Bool {
        if case .retryLater(503, "capture_pending") = self { return true }
        return false
    }

    public var description: String {
        switch self {
        case .contract(let rule, let member): "response contract violation: \(rule) at \(member)"
        case .http(let status, let code): "HTTP \(status)\(code.map { " (\($0))" } ?? "")"
        case .retryLater(let status, let code): "HTTP \(status)\(code.map { " (\($0))" } ?? ""), retryable"
        case .schemaActionNotSupported(let action): "schema action \(action) is not supported yet"
        case .rebuildPageConflict(let scope): "rebuild page of scope \(scope) re-received with different content"
        case .rebuildChecksumMismatch(let scope): "rebuild of scope \(scope) did not verify"
        case .invalidState(let reason): "invalid local state: \(reason)"
        case .store(let error): "store: \(error)"
        case .transport(let failure): "transport: \(failure)"
        }
    }
}

/// Sends one protocol body and returns the parsed 200 JSON, or throws the typed failure.
enum SyncExchange {
    static func post(_ transport: any SyncTransport, path: String, body: [UInt8]) throws(SyncError) -> (
        json: JSONValue, bytes: [UInt8]
    ) {
        let reply: SyncReply
        do {
            reply = try transport.post(path: path, body: body)
        } catch is ResponseTooLarge {
            throw .contract(rule: "response_too_large", member: "")
        } catch {
            throw .transport(SyncTransportFailure(error))
        }
        guard reply.status == 200 else { throw ErrorReply(status: reply.status, body: reply.body).syncError }
        // A transport that did not bound the body (a test's, a host's) is held to the route's budget here.
        let budget = ResponseBudget.forPath(path)
        guard reply.body.count <= budget.maximumBytes else {
            throw .contract(rule: "response_too_large", member: "")
        }
        do {
            return (try budget.parser.parse(reply.body), reply.body)
        } catch where error.rule == .valueLimitExceeded {
            throw .contract(rule: "response_too_many_values", member: "")
        } catch {
            throw .contract(rule: "malformed_json", member: "")
        }
    }

    /// Runs `body` and maps store and SQLite failures to ``SyncError``.
    static func mapping<Value>(_ body: () throws -> Value) throws(SyncError) -> Value {
        do {
            return try body()
        } catch let error as SyncError {
            throw error
        } catch let error as ClientStoreError {
            throw .store(error)
        } catch let error as SQLiteError {
            throw .store(.sqlite(error))
        } catch {
            throw .invalidState(reason: String(describing: type(of: error)))
        }
    }
}

/// Why no reply arrived, as the host's transport names it: the rule (`connection_refused`, `dns_failure`,
/// `tls_failure`, `timeout`, …), a message a user can act on (the URL without query or credentials, never a token or
/// body), and whether sending the same request again may succeed. A host transport throws it; any other error is a
/// retryable `transport` failure named by its type only.
public struct SyncTransportFailure: Error, Sendable, Equatable, CustomStringConvertible {
    public let rule: String
    public let message: String
    public let isRetryable: Bool

    public init(rule: String, message: String, isRetryable: Bool) {
        self.rule = rule
        self.message = message
        self.isRetryable = isRetryable
    }

    /// `error` itself when it is one, else a retryable `transport` failure named by the error's type.
    public init(_ error: any Error) {
        if let failure = error as? SyncTransportFailure {
            self = failure
        } else {
            self.init(rule: "transport", message: String(describing: type(of: error)), isRetryable: true)
        }
    }

    public var description: String { message }
}
