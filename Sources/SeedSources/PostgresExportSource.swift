import Foundation
import PostgresKit
import SeedArtifacts
import Synchronization
import SynchroProtocol

/// Upstream's PostgreSQL export interface (`spec/seed-format.md` §3, `spec/integrity.md` §7.2,
/// `docs/upstream/postgresql-extension.md` §1–§3): `synchro.synchro_schema_manifest()`,
/// `synchro.synchro_portable_seed_manifest(page_limit)` and `synchro.synchro_portable_seed_scope(…)`, all inside
/// one `SERIALIZABLE READ ONLY DEFERRABLE` transaction that ``schemaManifest()`` begins and ``finish()`` commits.
///
/// Results that are jsonb text go through the strict parser, a `{"error":{…}}` result becomes a typed refusal,
/// and the rest is re-encoded in RFC 8785 form (jsonb reorders members and respells numbers), so the exporter
/// checks exactly what it checks for the HTTP source. A page that arrives as `json` text shaped as a page (the
/// reference server's functions build the HTTP export's exact page text from stored canonical octets) is handed
/// over as it arrived, as the HTTP source hands over a response body: the exporter parses it once and checks
/// every record, digest and token. One page is in memory at a time.
///
/// The connection string is libpq's (`postgresql://USER@HOST:PORT/DB`, `key=value` pairs, `PG*` variables,
/// `~/.pgpass`, `sslmode`…); it is never kept or printed: messages name ``target``. Calls are serialized (the
/// exporter fetches the next page from another thread while it writes the current one), and each page's
/// successor is requested as soon as the page arrives (``scopePage(_:)``).
public final class PostgresExportSource: SeedExportSource {
    /// Where the connection goes: `host:port/database as user`, never a password.
    public let target: String
    private let session: Mutex<Session>

    /// The `synchro_pg` versions whose export interface this source speaks (the 0.4 series).
    public static let supportedExtensionSeries = "0.4"

    /// The export functions with their identity arguments, as upstream's GRANTs name them.
    enum Function {
        static let schemaManifest = "synchro.synchro_schema_manifest()"
        static let exportManifest = "synchro.synchro_portable_seed_manifest(integer)"
        static let scopePage = "synchro.synchro_portable_seed_scope(text,text,text,bigint,integer)"
    }

    /// Connects and checks the installed extension's version (when `synchro_pg` is installed as an extension).
    public init(connectionString: String) throws(SeedExportError) {
        let connection: PostgresConnection
        do {
            connection = try PostgresConnection(connectionString: connectionString)
        } catch .invalidConnectionString {
            // libpq's message quotes the offending part of the string, which may be a password.
            throw .invalidSource(reason: "the PostgreSQL connection string is not a libpq URI or key=value list")
        } catch {
            throw .database(route: "connect", failure: Self.failure(error, function: nil, target: ""))
        }
        target = connection.target
        try Self.checkExtensionVersion(connection)
        session = Mutex(Session(connection: connection))
    }

    /// Whether `connectionString` carries a password itself (nil when libpq cannot parse it): files that name a
    /// connection refuse one, so the secret stays in `PGPASSWORD` or `~/.pgpass`.
    public static func containsPassword(_ connectionString: String) -> Bool? {
        (try? PostgresConnection.keywords(of: connectionString)).map { $0.contains("password") }
    }

    /// The backend process serving the export (tests terminate it from a second connection).
    public var backendPID: Int32 {
        session.withLock { $0.connection.backendPID }
    }

    /// Begins the export transaction (ending any earlier one) and reads the schema manifest. Upstream's function
    /// answers `{schema_version, schema_hash, server_time, manifest}`; the `manifest` member is returned.
    public func schemaManifest() throws(SeedExportError) -> [UInt8] {
        try session.withLock { (session: inout sending Session) throws(SeedExportError) -> [UInt8] in
            try session.begin()
            let value = try session.call(Function.schemaManifest, "SELECT synchro.synchro_schema_manifest()", [])
            if case .object(let envelope) = value, case .object(let manifest)? = envelope["manifest"] {
                return try Self.canonical(.object(manifest), route: Function.schemaManifest)
            }
            return try Self.canonical(value, route: Function.schemaManifest)
        }
    }

    public func exportManifest(pageLimit: Int64) throws(SeedExportError) -> [UInt8] {
        try session.withLock { (session: inout sending Session) throws(SeedExportError) -> [UInt8] in
            _ = session.settleAhead()
            let value = try session.call(
                Function.exportManifest, "SELECT synchro.synchro_portable_seed_manifest($1::integer)",
                [String(pageLimit)])
            return try Self.canonical(value, route: Function.exportManifest)
        }
    }

    /// A page, and the call for the page after it sent at once (``Session/sendAhead(_:)``): the database builds
    /// that page while the exporter parses, checks and writes this one. The call sent ahead is the request the
    /// exporter makes next when this page is valid — same scope, receipt and limit, the token this page issued,
    /// the ordinal after a full page — and is used only when the next request is exactly that one; any other
    /// request first receives and discards it. Calls stay serialized on the one connection: at most one is ahead.
    public func scopePage(_ request: SeedPageRequest) throws(SeedExportError) -> [UInt8] {
        try session.withLock { (session: inout sending Session) throws(SeedExportError) -> [UInt8] in
            let result: (bytes: [UInt8], type: UInt32?)
            if let sent = session.settleAhead(), PageCall.same(sent.request, request) {
                result = try sent.outcome.get()
            } else {
                result = try session.result(Function.scopePage, PageCall.sql, PageCall.parameters(request))
            }
            if Self.isPageText(result.bytes, type: result.type) {
                if let next = PageCall.next(after: request, page: result.bytes) { session.sendAhead(next) }
                return result.bytes
            }
            return try Self.canonical(session.decode(Function.scopePage, result.bytes), route: Function.scopePage)
        }
    }

    /// Commits the export transaction: every page was read inside it.
    public func finish() throws(SeedExportError) {
        try session.withLock { (session: inout sending Session) throws(SeedExportError) in
            try session.commit()
        }
    }

    /// Rolls back an unfinished export transaction (the connection stays open for another attempt).
    public func abandon() {
        session.withLock { $0.rollback() }
    }

    /// Runs `body` (one whole export from this source) and, when it ends in a serialization failure, rolls the
    /// transaction back and runs it again after the policy's delay, through `sleep` (tests inject a recorder).
    /// Every other failure is thrown at once; the last serialization failure becomes `retries_exhausted`.
    public func withRetries<Value>(
        _ policy: SerializationRetryPolicy = SerializationRetryPolicy(),
        sleep: (Duration) -> Void = SerializationRetryPolicy.sleep,
        _ body: (PostgresExportSource) throws(SeedExportError) -> Value
    ) throws(SeedExportError) -> Value {
        var attempt = 1
        while true {
            do {
                return try body(self)
            } catch {
                abandon()
                guard case .database(let route, .serializationFailure) = error else { throw error }
                guard attempt < policy.attempts else {
                    throw .database(route: route, failure: .retriesExhausted(attempts: attempt))
                }
                attempt += 1
                sleep(policy.delay(before: attempt))
            }
        }
    }

    // MARK: - Helpers

    /// Refuses an installed `synchro_pg` outside the supported series. A database without the extension (the
    /// reference server's functions) is checked by calling the functions: a missing one is `42883`.
    private static func checkExtensionVersion(_ connection: PostgresConnection) throws(SeedExportError) {
        let version: String?
        do {
            version = try connection.execute(
                "SELECT extversion FROM pg_catalog.pg_extension WHERE extname = 'synchro_pg'").scalar
        } catch {
            throw .database(route: "pg_extension", failure: failure(error, function: nil, target: connection.target))
        }
        guard let version else { return }
        guard version == supportedExtensionSeries || version.hasPrefix(supportedExtensionSeries + ".") else {
            throw .database(
                route: "pg_extension", failure: .interfaceVersion(found: version, supported: supportedExtensionSeries))
        }
    }

    /// Whether a page result is `json` text that starts as a page does (`{"scope":`): handed over unparsed. A
    /// refusal (`{"error":…}`) or any other text takes the parsing path; jsonb text (which also starts with its
    /// shortest member, `scope`) is always re-encoded.
    static func isPageText(_ bytes: [UInt8], type: UInt32?) -> Bool {
        type == PostgresRows.jsonType && bytes.starts(with: pagePrefix)
    }

    private static let pagePrefix = Array(#"{"scope":"#.utf8)

    /// The RFC 8785 octets of a result.
    static func canonical(_ value: JSONValue, route: String) throws(SeedExportError) -> [UInt8] {
        do {
            return try CanonicalJSON.encode(value)
        } catch {
            throw .malformedJSON(route: route, rule: "not_i_json", offset: 0)
        }
    }

    /// The typed cause of a libpq or server failure during a call to `function`.
    static func failure(_ error: PostgresError, function: String?, target: String) -> SeedDatabaseFailure {
        switch error {
        case .cannotConnect(let target, let reason): return .cannotConnect(target: target, reason: reason)
        case .authenticationFailed(let target): return .authenticationFailed(target: target)
        case .connectionLost(let target): return .connectionLost(target: target)
        case .invalidConnectionString, .client:
            return .server(sqlState: "", rule: error.rule, message: "\(error)")
        case .server(let state, let message):
            switch state {
            case "42501": return .notSeedExporter(target: target)
            case "42883", "3F000": return .interfaceMissing(function: function ?? "a synchro function")
            case "40001", "40P01": return .serializationFailure
            default: return .server(sqlState: state, rule: error.rule, message: message)
            }
        }
    }
}

/// The connection and whether the export transaction is open; only touched under the source's lock.
private struct Session {
    let connection: PostgresConnection
    var inTransaction = false
    /// The page call sent and not yet received (``PostgresExportSource/scopePage(_:)``).
    var ahead: SeedPageRequest?

    /// Sends the page call for `request` without waiting for it; when it cannot be sent, the request is simply
    /// made again when asked for (and then reports its failure).
    mutating func sendAhead(_ request: SeedPageRequest) {
        do {
            try connection.send(PageCall.sql, PageCall.parameters(request))
            ahead = request
        } catch {
            ahead = nil
        }
    }

    /// Receives the call sent ahead, if any, leaving the connection idle: its request and its result or failure.
    mutating func settleAhead() -> (request: SeedPageRequest, outcome: Result<(bytes: [UInt8], type: UInt32?), SeedExportError>)? {
        guard let request = ahead else { return nil }
        ahead = nil
        return (request, Result { () throws(SeedExportError) in try receive() })
    }

    /// The result of the call sent ahead, as ``result(_:_:_:)`` reports a call's.
    private func receive() throws(SeedExportError) -> (bytes: [UInt8], type: UInt32?) {
        let function = PostgresExportSource.Function.scopePage
        let rows: PostgresRows
        do {
            rows = try connection.receive()
        } catch {
            let failure = PostgresExportSource.failure(error, function: function, target: connection.target)
            throw .database(route: function, failure: failure)
        }
        return try Self.first(of: rows, function: function)
    }

    /// Ends any earlier transaction and begins the export snapshot.
    mutating func begin() throws(SeedExportError) {
        _ = settleAhead()
        rollback()
        do {
            try connection.execute(PostgresTransactionMode.snapshotExport.beginSQL)
        } catch {
            throw .database(
                route: "BEGIN", failure: PostgresExportSource.failure(error, function: nil, target: connection.target))
        }
        inTransaction = true
    }

    mutating func commit() throws(SeedExportError) {
        _ = settleAhead()
        guard inTransaction else { return }
        inTransaction = false
        do {
            try connection.execute("COMMIT")
        } catch {
            throw .database(
                route: "COMMIT", failure: PostgresExportSource.failure(error, function: nil, target: connection.target))
        }
    }

    mutating func rollback() {
        _ = settleAhead()
        guard inTransaction else { return }
        inTransaction = false
        _ = try? connection.execute("ROLLBACK")
    }

    /// Runs one function call and returns its JSON result, refusing SQL NULL and `{"error":{…}}`.
    func call(_ function: String, _ sql: String, _ parameters: [String?]) throws(SeedExportError) -> JSONValue {
        try decode(function, result(function, sql, parameters).bytes)
    }

    /// Runs one function call and returns its result's octets and type OID, refusing SQL NULL.
    func result(
        _ function: String, _ sql: String, _ parameters: [String?]
    ) throws(SeedExportError) -> (bytes: [UInt8], type: UInt32?) {
        let rows: PostgresRows
        do {
            rows = try connection.execute(sql, parameters)
        } catch {
            let failure = PostgresExportSource.failure(error, function: function, target: connection.target)
            throw .database(route: function, failure: failure)
        }
        return try Self.first(of: rows, function: function)
    }

    /// The one value of a call's result and its type OID, refusing SQL NULL.
    static func first(
        of rows: PostgresRows, function: String
    ) throws(SeedExportError) -> (bytes: [UInt8], type: UInt32?) {
        guard let first = rows.rows.first, let bytes = first.first ?? nil else {
            throw .database(route: function, failure: .nullResult)
        }
        return (bytes, rows.columnTypes.first)
    }

    /// A result's JSON value through the strict parser, `{"error":{…}}` becoming a typed refusal.
    func decode(_ function: String, _ bytes: [UInt8]) throws(SeedExportError) -> JSONValue {
        let value: JSONValue
        do {
            value = try StrictJSONParser().parse(bytes)
        } catch {
            throw .malformedJSON(route: function, rule: error.rule.rawValue, offset: error.offset)
        }
        if case .object(let object) = value, case .object(let refusal)? = object["error"] {
            throw .database(route: function, failure: .refused(
                code: refusal["code"]?.stringValue ?? "unknown_error",
                message: Self.shareable(refusal["message"]?.stringValue ?? "")))
        }
        return value
    }

    /// Upstream's messages are fixed sentences; a message carrying a long unbroken word (a token, a cursor) is
    /// withheld rather than printed.
    static func shareable(_ message: String) -> String {
        let longest = message.split(separator: " ").map(\.count).max() ?? 0
        return longest > 48 ? "(message withheld)" : String(message.prefix(200))
    }
}

/// How often, and how far apart, an export whose transaction hit a serialization failure is run again: the
/// whole transaction, as PostgreSQL documents for `SERIALIZABLE`. Delays double from ``firstDelay`` up to
/// ``maximumDelay``.
public struct SerializationRetryPolicy: Sendable, Equatable {
    /// Attempts in all, at least 1.
    public var attempts: Int
    public var firstDelay: Duration
    public var maximumDelay: Duration

    public init(attempts: Int = 5, firstDelay: Duration = .milliseconds(200), maximumDelay: Duration = .seconds(5)) {
        self.attempts = max(1, attempts)
        self.firstDelay = firstDelay
        self.maximumDelay = maximumDelay
    }

    /// The wait before attempt `attempt` (2 or more).
    public func delay(before attempt: Int) -> Duration {
        var delay = firstDelay
        for _ in 0..<max(0, attempt - 2) where delay < maximumDelay {
            delay *= 2
        }
        return min(delay, maximumDelay)
    }

    /// The real sleeper.
    public static func sleep(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        Thread.sleep(forTimeInterval: Double(seconds) + Double(attoseconds) / 1e18)
    }
}

/// The page call's text and parameters, and the call a page implies next.
enum PageCall {
    static let sql =
        "SELECT synchro.synchro_portable_seed_scope($1::text, $2::text, $3::text, $4::bigint, $5::integer)"

    static func parameters(_ request: SeedPageRequest) -> [String?] {
        [request.scopeID, request.pageToken, request.receipt, String(request.expectedRowOrdinal),
         String(request.limit)]
    }

    /// Whether two requests are the same call, comparing every text by its octets.
    static func same(_ a: SeedPageRequest, _ b: SeedPageRequest) -> Bool {
        a.scopeID.utf8.elementsEqual(b.scopeID.utf8) && a.pageToken.utf8.elementsEqual(b.pageToken.utf8)
            && a.receipt.utf8.elementsEqual(b.receipt.utf8) && a.expectedRowOrdinal == b.expectedRowOrdinal
            && a.limit == b.limit
    }

    /// The request the exporter makes after `page` when `page` is a valid full page: read from the page text's
    /// last members, `"page_token":"TOKEN","has_more":true}`, as the reference server's functions end a page;
    /// nil for anything else (a last page, another shape, a token with characters outside base64url and `.`).
    /// Only a guess: the exporter still parses and checks the page, and a request that differs is made anew.
    static func next(after request: SeedPageRequest, page: [UInt8]) -> SeedPageRequest? {
        guard page.count > moreSuffix.count, page.suffix(moreSuffix.count).elementsEqual(moreSuffix) else {
            return nil
        }
        let end = page.count - moreSuffix.count
        var start = end
        while start > 0, tokenOctet(page[start - 1]) { start -= 1 }
        guard start < end, start >= tokenPrefix.count,
              page[(start - tokenPrefix.count)..<start].elementsEqual(tokenPrefix)
        else { return nil }
        return SeedPageRequest(
            scopeID: request.scopeID, pageToken: String(decoding: page[start..<end], as: UTF8.self),
            receipt: request.receipt, expectedRowOrdinal: request.expectedRowOrdinal + request.limit,
            limit: request.limit)
    }

    private static let moreSuffix = Array(#"","has_more":true}"#.utf8)
    private static let tokenPrefix = Array(#","page_token":""#.utf8)

    private static func tokenOctet(_ octet: UInt8) -> Bool {
        switch octet {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."):
            return true
        default:
            return false
        }
    }
}
