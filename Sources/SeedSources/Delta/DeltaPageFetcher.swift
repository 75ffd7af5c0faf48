import Foundation
import SynchroHTTP
import SynchroProtocol

/// GETs one page over the project's transport (libcurl): the bearer credential and the definition's headers on
/// every request, `429`/`503` retried after their `Retry-After` (bounded), and every failure a
/// ``DeltaSourceError/http(url:kind:detail:)`` naming the base URL and path — never the query, which carries the
/// cursor, nor a header value.
struct DeltaPageFetcher: Sendable {
    let transport: any HTTPTransport
    let baseURL: String
    let bearer: String?
    let headers: [(String, String)]
    let options: DeltaExportOptions

    func get(path: String, query: String, extraHeaders: [(String, String)]) throws(DeltaSourceError) -> JSONValue {
        var fields = HTTPHeaders()
        fields.append(name: "Accept", value: "application/json")
        if let bearer { fields.append(name: "Authorization", value: "Bearer " + bearer) }
        for (name, value) in headers + extraHeaders { fields.append(name: name, value: value) }
        let request = TransportRequest(method: .get, path: path + "?" + query, headers: fields)
        let url = baseURL + path
        var attempt = 0
        while true {
            // SIGINT/SIGTERM (or a caller's cancellation) ends the run before its next request, never mid-page.
            if options.isInterrupted() { throw .output(.interrupted) }
            let response: TransportResponse
            do {
                response = try transport.send(request)
            } catch {
                // The kind is the network failure's rule (`connection_refused`, `dns_failure`, `timeout`, …).
                throw .http(url: url, kind: error.rule, detail: error.description)
            }
            if response.status == 200 {
                do {
                    return try StrictJSONParser().parse(response.body)
                } catch {
                    throw .http(
                        url: url, kind: "malformed_json", detail: "\(error.rule.rawValue) at octet \(error.offset)")
                }
            }
            guard response.status == 429 || response.status == 503 else {
                throw .http(url: url, kind: "status", detail: "HTTP \(response.status)")
            }
            let delay = response.retryAfter(now: Date()) ?? options.defaultRetryDelay
            guard attempt < options.maximumRetries, delay <= options.longestRetryAfter else {
                let detail = "HTTP \(response.status) after \(attempt + 1) attempts"
                throw .http(url: url, kind: "retries_exhausted", detail: detail)
            }
            attempt += 1
            options.sleep(delay)
        }
    }
}

/// What a delta export may do besides its definition.
public struct DeltaExportOptions: Sendable {
    /// Replace an existing output file.
    public var overwrite: Bool
    /// Retries of one request answered 429 or 503.
    public var maximumRetries: Int
    /// A `Retry-After` longer than this ends the export instead of waiting.
    public var longestRetryAfter: Duration
    /// The wait of a 429/503 without a (valid) `Retry-After`.
    public var defaultRetryDelay: Duration
    /// How a wait happens; tests record the delays instead of sleeping.
    public var sleep: @Sendable (Duration) -> Void
    /// Asked before every request: true ends the run with `interrupted` (the CLI passes SIGINT/SIGTERM here).
    public var isInterrupted: @Sendable () -> Bool
    /// The limit of one request, connecting included (connecting gets at most 10 s of it): `--timeout`.
    public var timeout: Duration = .seconds(60)

    public init(
        overwrite: Bool = false, maximumRetries: Int = 5, longestRetryAfter: Duration = .seconds(120),
        defaultRetryDelay: Duration = .seconds(1),
        sleep: @escaping @Sendable (Duration) -> Void = { delay in
            let parts = delay.components
            Thread.sleep(forTimeInterval: Double(parts.seconds) + Double(parts.attoseconds) / 1e18)
        },
        isInterrupted: @escaping @Sendable () -> Bool = { false }
    ) {
        self.isInterrupted = isInterrupted
        self.overwrite = overwrite
        self.maximumRetries = maximumRetries
        self.longestRetryAfter = longestRetryAfter
        self.defaultRetryDelay = defaultRetryDelay
        self.sleep = sleep
    }

    /// The transport of a run against `definition`'s base URL, with this run's limits.
    func transport(for definition: DeltaSourceDefinition) throws(DeltaSourceError) -> CurlTransport {
        do {
            return try CurlTransport(configuration: .init(baseURL: definition.baseURL, timeout: timeout))
        } catch {
            throw .definition(member: "base_url", rule: "not_usable_by_the_transport")
        }
    }
}
