import SQLiteKit
import Synchronization
import SynchroProtocol

/// The reference protocol 3 server behind HTTP: authentication, media type, strict JSON intake,
/// dispatch to the endpoints, and the error envelope (`spec/wire-protocol.md` §1, §8).
///
/// All state lives in one SQLite store used under one lock: requests are serialized, which keeps
/// every durable transition one transaction and every replay exact.
public final class SyncEngine: HTTPHandler, Sendable {
    let configuration: ServerConfiguration
    let state: Mutex<EngineState>
    /// Request-level faults, kept apart from the store lock so scheduling never waits on a request.
    let faults = Mutex(FaultPlan())
    /// The background materializer of ``MaterializationMode/background(interval:)``.
    private let worker: MaterializerWorker?
    /// The store's checkpointer (``ServerStore/checkpointer``), used outside the engine's lock.
    let checkpointer: WALCheckpointer?
    /// ``ServerStore/logLimit``.
    private let logLimit: Int
    /// ``ServerStore/checkpointFrames``.
    private let checkpointFrames: Int
    /// Failed credential checks per client address (``ServerConfiguration/failedAuthenticationLimit``).
    let failedAuthentications: FailedAuthentications?

    public init(configuration: ServerConfiguration) throws {
        self.configuration = configuration
        let store = if let postgres = configuration.postgresStore {
            try ServerStore(
                postgres: postgres, dataset: configuration.dataset, rowsOverride: configuration.rowsOverride,
                clock: configuration.clock)
        } else {
            try ServerStore(
                path: configuration.databasePath, dataset: configuration.dataset,
                rowsOverride: configuration.rowsOverride, clock: configuration.clock,
                checkpointFrames: configuration.checkpointFrames)
        }
        checkpointer = store.checkpointer
        logLimit = store.logLimit
        checkpointFrames = store.checkpointFrames
        failedAuthentications = configuration.failedAuthenticationLimit.map {
            FailedAuthentications(limit: $0, clock: configuration.clock)
        }
        state = Mutex(try EngineState(store: store, dataset: configuration.dataset))
        if case .background(let interval) = configuration.materialization {
            worker = MaterializerWorker(interval: interval)
        } else {
            worker = nil
        }
        worker?.start(engine: self)
    }

    deinit {
        worker?.stop()
    }

    /// Stops the background materializer, if any (idempotent). Pending writes stay captured.
    public func shutdown() {
        worker?.stop()
    }

    /// The JSON body limit of push (`spec/wire-protocol.md` §9) and of the other routes.
    static let pushBodyLimit = PushLimits.maxRequestBodyOctets
    static let otherBodyLimit = 8 * 1024 * 1024

    /// Turns every captured write into pull-visible stream entries now (tests use this with
    /// `MaterializationMode.manual` to schedule visibility exactly).
    public func materialize() {
        let mark = checkpointer?.mark
        state.withLock { Materializer.materializePending(state: &$0) }
        boundLog(since: mark)
    }

    /// After a request or pass, once the engine's lock is released, with the log's ``WALCheckpointer/mark`` from
    /// before it: when the log was already past the checkpoint threshold before it, did not restart during it and
    /// is now at ``ServerStore/logLimit`` frames or more, waits for the checkpoint beside the store, so that the
    /// next write restarts the log (``WALCheckpointer/bound(atFrames:since:threshold:)``). Requests that arrive
    /// meanwhile are served. A request long only with its own frames (a rebuild's staging) answers without
    /// waiting for its checkpoint, which runs while the client fetches pages.
    func boundLog(since mark: LogMark?) {
        guard let mark else { return }
        checkpointer?.bound(atFrames: logLimit, since: mark, threshold: checkpointFrames)
    }

    public func handle(_ request: HTTPRequest) -> HTTPResponse {
        if Self.takesCredential(request.path),
            let wait = failedAuthentications?.retryAfter(for: request.clientAddress)
        {
            return tooManyFailedAuthentications(retryAfter: wait)
        }
        switch (request.method, request.path) {
        case ("GET", "/ready"): return .json(body: Array(#"{"ready":true}"#.utf8))
        case ("GET", "/sync/schema"): return schemaResponse()
        case ("POST", "/sync/connect"), ("POST", "/sync/push"), ("POST", "/sync/pull"), ("POST", "/sync/rebuild"):
            if let proxy = faults.withLock({ $0.nextProxyError(for: request.path) }) {
                return proxyResponse(status: proxy.status, retryAfter: proxy.retryAfter)
            }
            let fault = faults.withLock { $0.next(for: request.path) }
            if let status = fault.rejectStatus {
                return respond(.failure(status == 503
                    ? WireError(.temporaryUnavailable, "temporarily unavailable")
                    : WireError(.retryLater, "retry later")))
            }
            let mark = checkpointer?.mark
            let response = respond(protocolRoute(request))
            boundLog(since: mark)
            return fault.loseResponse ? response.losingBody() : response
        case ("POST", "/operator/faults"):
            return operatorFault(request)
        case ("POST", "/operator/seed/manifest"), ("POST", "/operator/seed/scope"), ("POST", "/operator/schema"):
            return operatorRoute(request)
        case ("GET", "/sync/tables"):
            return respond(state.withLock { TablesEndpoint.handle(state: &$0) })
        case (_, "/operator/faults"), (_, "/operator/seed/manifest"), (_, "/operator/seed/scope"),
            (_, "/operator/schema"):
            return methodNotAllowed("POST")
        case (_, "/ready"), (_, "/sync/schema"), (_, "/sync/tables"):
            return methodNotAllowed("GET")
        case (_, "/sync/connect"), (_, "/sync/push"), (_, "/sync/pull"), (_, "/sync/rebuild"):
            return methodNotAllowed("POST")
        default:
            return respond(.failure(WireError(.invalidRequest, "unknown route")))
        }
    }

    /// Runs one protocol route: the dispatch precedence of §8.4 up to the endpoint itself.
    private func protocolRoute(_ request: HTTPRequest) -> Result<EndpointReply, WireError> {
        guard let user = authenticate(request) else {
            failedAuthentications?.recordFailure(of: request.clientAddress)
            return .failure(WireError(.authRequired, "authentication required"))
        }
        guard Self.hasJSONContentType(request) else {
            return .failure(.invalidRequest("content type must be application/json"))
        }
        let limit = request.path == "/sync/push" ? Self.pushBodyLimit : Self.otherBodyLimit
        guard request.body.count <= limit else { return .failure(.invalidRequest("request body too large")) }
        let body: JSONValue
        do {
            body = try StrictJSONParser(limits: JSONLimits(maxBytes: limit, maxDepth: 64)).parse(request.body)
        } catch {
            return .failure(.invalidRequest("malformed JSON: \(error.rule.rawValue)"))
        }
        guard case .object = body else { return .failure(.invalidRequest("request envelope must be an object")) }
        return state.withLock { state in
            do {
                try state.followSharedStore()
            } catch {
                return .failure(WireError(.temporaryUnavailable, "temporarily unavailable"))
            }
            let context = EndpointContext(
                user: user, configuration: configuration, now: configuration.clock.nowMicroseconds(),
                rawBody: request.body)
            switch request.path {
            case "/sync/connect": return ConnectEndpoint.handle(body, context: context, state: &state)
            case "/sync/push":
                let result = PushEndpoint.handle(body, context: context, state: &state)
                if configuration.materialization == .immediate && !state.materializationPaused {
                    Materializer.materializePending(state: &state)
                }
                return result
            case "/sync/pull": return PullEndpoint.handle(body, context: context, state: &state)
            default: return RebuildEndpoint.handle(body, context: context, state: &state)
            }
        }
    }

    /// `Authorization: Bearer <credential>`, exactly one header, compared in constant time.
    private func authenticate(_ request: HTTPRequest) -> String? {
        guard request.headers.count(of: "Authorization") == 1, let value = request.headers.first("Authorization"),
              value.hasPrefix("Bearer "), value.utf8.count > 7
        else { return nil }
        let presented = Array(value.utf8.dropFirst(7))
        var user: String?
        for (secret, candidate) in configuration.credentials where Self.constantTimeEqual(Array(secret.utf8), presented) {
            user = candidate
        }
        return user
    }

    /// Compares the SHA-256 digests of both sides, 32 octets each, without an early exit: the time depends on
    /// neither where the credentials differ nor whether their lengths do (an early return on a length mismatch
    /// told a prober the secret's length, issue #19).
    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        let x = SHA256.hash(a), y = SHA256.hash(b)
        var difference: UInt8 = 0
        for i in 0..<x.count { difference |= x[i] ^ y[i] }
        return difference == 0
    }

    /// Exactly one `Content-Type` whose media type is `application/json` (case-insensitive),
    /// parameters allowed when well formed (`spec/wire-protocol.md` §1.2).
    static func hasJSONContentType(_ request: HTTPRequest) -> Bool {
        guard request.headers.count(of: "Content-Type") == 1, let value = request.headers.first("Content-Type") else {
            return false
        }
        let parts = value.split(separator: ";", omittingEmptySubsequences: false)
        let mediaType = parts[0].trimmingCharacters(in: " \t").lowercased()
        guard mediaType == "application/json" else { return false }
        for parameter in parts.dropFirst() {
            let pair = parameter.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard pair.count == 2, !pair[0].trimmingCharacters(in: " \t").isEmpty,
                  !pair[1].trimmingCharacters(in: " \t").isEmpty
            else { return false }
        }
        return true
    }

    /// `POST /operator/faults` with the operator credential: schedules one ``ServerFault``.
    private func operatorFault(_ request: HTTPRequest) -> HTTPResponse {
        guard isOperator(request) else { return respond(.failure(WireError(.authRequired, "authentication required"))) }
        do {
            let body = try StrictJSONParser(limits: JSONLimits(maxBytes: 65536, maxDepth: 8)).parse(request.body)
            try inject(try Self.fault(from: body))
            return .json(body: Array(#"{"ok":true}"#.utf8))
        } catch let violation as ExactObjectReader.Violation {
            return respond(.failure(.invalidRequest(violation.description)))
        } catch let error as JSONParseError {
            return respond(.failure(.invalidRequest("malformed JSON: \(error.rule.rawValue)")))
        } catch {
            return respond(.failure(WireError(.temporaryUnavailable, "operation failed")))
        }
    }

    /// The operator routes with a JSON body: seed export and schema publication.
    private func operatorRoute(_ request: HTTPRequest) -> HTTPResponse {
        guard isOperator(request) else { return respond(.failure(WireError(.authRequired, "authentication required"))) }
        guard Self.hasJSONContentType(request) else {
            return respond(.failure(.invalidRequest("content type must be application/json")))
        }
        let body: JSONValue
        do {
            body = try StrictJSONParser(limits: JSONLimits(maxBytes: Self.otherBodyLimit, maxDepth: 64)).parse(request.body)
        } catch {
            return respond(.failure(.invalidRequest("malformed JSON: \(error.rule.rawValue)")))
        }
        let now = configuration.clock.nowMicroseconds()
        let mark = checkpointer?.mark
        let reply = state.withLock { state in
            do {
                try state.followSharedStore()
            } catch {
                return Result<EndpointReply, WireError>.failure(WireError(.temporaryUnavailable, "temporarily unavailable"))
            }
            switch request.path {
            case "/operator/schema": return SchemaPublishEndpoint.handle(body, now: now, state: &state)
            case "/operator/seed/manifest": return SeedExportEndpoint.manifest(body, now: now, state: &state)
            default: return SeedExportEndpoint.scope(body, now: now, state: &state)
            }
        }
        boundLog(since: mark)
        return respond(reply)
    }

    /// The operator credential, compared in constant time; operator routes are off without one.
    func isOperator(_ request: HTTPRequest) -> Bool {
        let accepted = operatorCredentialMatches(request)
        if !accepted { failedAuthentications?.recordFailure(of: request.clientAddress) }
        return accepted
    }

    private func operatorCredentialMatches(_ request: HTTPRequest) -> Bool {
        guard let token = configuration.operatorToken, request.headers.count(of: "Authorization") == 1,
              let value = request.headers.first("Authorization"), value.hasPrefix("Bearer ")
        else { return false }
        return Self.constantTimeEqual(Array(token.utf8), Array(value.utf8.dropFirst(7)))
    }

    private func schemaResponse() -> HTTPResponse {
        let body: [UInt8]? = state.withLock { state in
            try? state.store.db.cachedStatement("SELECT manifest FROM manifests ORDER BY version DESC LIMIT 1")
                .scalar()?.blobValue
        }
        guard let body else { return respond(.failure(WireError(.syncIntegrityFailure, "sync operation failed"))) }
        return .json(body: body)
    }

    private func methodNotAllowed(_ allowed: String) -> HTTPResponse {
        var response = respond(.failure(WireError(.invalidRequest, "method not allowed")))
        response.status = 405
        response.headers.append(name: "Allow", value: allowed)
        return response
    }

    /// The routes that check a credential: an address past its failed-authentication limit is refused on them.
    static func takesCredential(_ path: String) -> Bool {
        path.hasPrefix("/operator/")
            || ["/sync/connect", "/sync/push", "/sync/pull", "/sync/rebuild"].contains(path)
    }

    /// `429 retry_later` with the seconds until the address's oldest counted failure leaves the window.
    private func tooManyFailedAuthentications(retryAfter seconds: Int64) -> HTTPResponse {
        let error = WireError(.retryLater, "too many failed authentications")
        let body = (try? CanonicalJSON.encode(error.json)) ?? []
        return .json(status: error.code.httpStatus, body: body, headers: [("Retry-After", String(seconds))])
    }

    /// The HTTP form of an endpoint result: the exact stored bytes for replays, the error envelope
    /// with `Retry-After` on every 429 and 503 otherwise.
    func respond(_ result: Result<EndpointReply, WireError>) -> HTTPResponse {
        switch result {
        case .success(let reply):
            return .json(status: reply.status, body: reply.body)
        case .failure(let error):
            var headers: HTTPHeaders = []
            if error.code.carriesRetryAfter {
                headers.append(name: "Retry-After", value: String(configuration.retryAfterSeconds))
            }
            let body = (try? CanonicalJSON.encode(error.json)) ?? []
            return .json(status: error.code.httpStatus, body: body, headers: headers)
        }
    }
}

/// What an endpoint answers on success: usually 200 and a body; a push replay carries its stored status.
struct EndpointReply {
    var status: Int = 200
    var body: [UInt8]

    init(status: Int = 200, body: [UInt8]) {
        self.status = status
        self.body = body
    }

    init(json: JSONValue) {
        self.body = (try? CanonicalJSON.encode(json)) ?? []
    }
}

/// Per-request facts every endpoint needs.
struct EndpointContext {
    let user: String
    let configuration: ServerConfiguration
    /// The request's instant, microseconds since the epoch.
    let now: Int64
    /// The exact request body (push measures and fingerprints need the octets as received).
    let rawBody: [UInt8]

    var serverTime: String { ProtocolTimestamp.format(microseconds: now) }
}

/// The mutable server state behind the engine's lock.
struct EngineState {
    let store: ServerStore
    var manifest: SchemaManifest
    /// Set by the `pause_materialization` fault: captured writes stay invisible to pull and rebuild.
    var materializationPaused = false
    /// Scope grants and revocations per user (the `reassign_scopes` fault).
    var assignmentOverrides: [String: AssignmentOverride] = [:]
    /// Scopes whose next terminal checksum is deliberately wrong (the `corrupt_checksum` fault).
    var corruptNextChecksum: Set<String> = []
    /// Signs incremental cursors (`c3.` tokens).
    let cursorSigner: TokenSigner
    /// Signs rebuild continuations (`r3.` tokens), a different kind with a different key.
    let continuationSigner: TokenSigner
    /// The served dataset: its scope declarations decide which scopes a materialized row belongs to.
    let dataset: Dataset
    /// Terminal-page scope digests, reused until the scope's stream advances.
    var scopeDigests = ScopeDigestCache()
    /// Set while the materializer cannot get past a capture entry: clients waiting for their
    /// writes get 503 `temporary_unavailable` with reason `capture_blocked`, not `capture_pending`.
    var captureBlocked = false
    /// Signs portable seed export page tokens (`sp1.` tokens) with the seed-page key.
    let seedPageSigner: TokenSigner
    /// Signs seed continuation receipts (`sc1.` tokens) with the seed-continuation key.
    let seedReceiptSigner: TokenSigner
    /// The `key_id` members of seed tokens, one per seed key.
    let seedKeyIDs: SeedKeyIDs

    /// On a store other processes share, takes what they may have changed since this process last looked: the
    /// active manifest (a schema publication). Everything else the engine keeps between requests is either
    /// read inside each request's transaction, keyed by durable counters (``ScopeDigestCache``), immutable once
    /// created (the HMAC keys), or a test fault of this process.
    mutating func followSharedStore() throws {
        guard store.db.isShared else { return }
        let version = try store.db.cachedStatement("SELECT max(version) FROM manifests").scalar()?.integerValue
        if version != manifest.schemaVersion {
            manifest = try store.currentManifest()
            scopeDigests = ScopeDigestCache()
        }
    }

    init(store: ServerStore, dataset: Dataset) throws {
        self.store = store
        self.dataset = dataset
        manifest = try store.currentManifest()
        cursorSigner = TokenSigner(
            prefix: "c3", purpose: ServerKeyPurpose.pullCursor.rawValue,
            key: try store.key(ServerKeyPurpose.pullCursor.rawValue))
        continuationSigner = TokenSigner(
            prefix: "r3", purpose: ServerKeyPurpose.rebuildContinuation.rawValue,
            key: try store.key(ServerKeyPurpose.rebuildContinuation.rawValue))
        let seedPageKey = try store.key(ServerKeyPurpose.seedPage.rawValue)
        let seedReceiptKey = try store.key(ServerKeyPurpose.seedContinuation.rawValue)
        seedPageSigner = TokenSigner(
            prefix: SeedTokenKind.page.prefix, purpose: ServerKeyPurpose.seedPage.rawValue, key: seedPageKey)
        seedReceiptSigner = TokenSigner(
            prefix: SeedTokenKind.continuation.prefix, purpose: ServerKeyPurpose.seedContinuation.rawValue,
            key: seedReceiptKey)
        seedKeyIDs = SeedKeyIDs(pageKey: seedPageKey, receiptKey: seedReceiptKey)
    }
}

extension Substring {
    func trimmingCharacters(in set: String) -> String {
        var s = self[...]
        while let first = s.first, set.contains(first) { s = s.dropFirst() }
        while let last = s.last, set.contains(last) { s = s.dropLast() }
        return String(s)
    }
}
