import SynchroProtocol

/// A non-200 reply as the dispatch reads it (`spec/wire-protocol.md` §8.1–§8.3, client contract "Strict
/// dispatch": "the adapter's error body, status, and retryable value are authoritative").
///
/// With a protocol error envelope (`error.code` a string, `error.retryable` a boolean) the envelope decides: the
/// request is sent again exactly when `retryable` is true, whatever the status. Without one — a proxy or load
/// balancer in front of the server answering with its own HTML page — only 429, 502, 503 and 504 are retried:
/// they say "not now" about a server that never saw the request or could not answer it.
struct ErrorReply: Sendable, Equatable {
    /// Statuses retried when the body is not a protocol error envelope.
    static let retryableWithoutEnvelope: Set<Int> = [429, 502, 503, 504]

    /// The HTTP status.
    let status: Int
    /// The envelope's code, nil when the body had none.
    let code: String?
    /// Whether the same request is sent again after backoff.
    let isRetryable: Bool

    init(status: Int, body: [UInt8]) {
        self.status = status
        let error = (try? ResponseBudget.error.parser.parse(body))?.objectValue?["error"]?.objectValue
        code = error?["code"]?.stringValue
        if let code, case .bool(let retryable)? = error?["retryable"], !code.isEmpty {
            isRetryable = retryable
        } else {
            isRetryable = Self.retryableWithoutEnvelope.contains(status)
        }
    }

    /// The typed failure of this reply.
    var syncError: SyncError {
        isRetryable ? .retryLater(status: status, code: code) : .http(status: status, code: code)
    }
}
